// Command etcd is a thin wrapper around etcd's own entry point, so the e2e
// test cluster can build an etcd server binary from the Go module pinned in
// ../go.mod instead of downloading a release tarball.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
