//go:build tools

// Pins the promtool command the alert-rule tests run; build.sh builds it from this module.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
