//go:build tools

// Pins the helm command the chart tests run; build.sh builds it from this module.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
