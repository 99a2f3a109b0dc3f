package main

import (
	"io"
	"testing"

	"go.uber.org/zap/zapcore"
)

// TestUpLogsQuietlyByDefault: `tabwarden up` shows its roles' warnings and
// errors only, so that the ready banner is not buried under INFO lines; an
// explicit level still wins.
func TestUpLogsQuietlyByDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want zapcore.Level
	}{
		{nil, zapcore.WarnLevel},
		{[]string{"--log-level", "info"}, zapcore.InfoLevel},
		{[]string{"--zap-log-level", "debug"}, zapcore.DebugLevel},
		{[]string{"--log-level", "2"}, zapcore.Level(-2)},
	} {
		fs := newFlagSet("up", "", io.Discard)
		var lf logFlags
		lf.bind(fs, true)
		if err := parse(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		lf.quietByDefault(fs)
		if _, err := lf.setup(io.Discard); err != nil {
			t.Fatal(err)
		}
		if got := lf.opts.Level; !got.Enabled(tc.want) || (tc.want < zapcore.ErrorLevel && got.Enabled(tc.want-1)) {
			t.Errorf("up %v: the roles log from %v, want from %v", tc.args, got, tc.want)
		}
	}
}
