package testenv

import (
	"go.uber.org/zap/zapcore"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
)

// DebugLogs logs errors only, and everything from debug up when debugging.
var DebugLogs = &Logs{Quiet: zapcore.ErrorLevel, Debug: zapcore.DebugLevel}

// E2E are the Options of an end-to-end package on one real Chromium (default
// options) and the fixture site: DebugLogs, and a state directory whose name
// starts with dir. Setup keeps what the package's tests use.
func E2E(dir string, setup func(*Env) error) Options {
	return Options{Logs: DebugLogs, Dir: dir, Site: true, Chromium: &chromium.Options{}, Setup: setup}
}
