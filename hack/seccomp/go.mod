// Module seccomp writes the seccomp profile of the pool's Chromium container
// (config/agent/seccomp/chromium.json): the container runtimes' default profile
// (moby's; the RuntimeDefault of containerd and CRI-O derive from it) plus what
// Chromium's own sandbox needs. A module of its own so that tabwarden does not
// depend on moby. Run: cd hack/seccomp && go run . > ../../config/agent/seccomp/chromium.json
module github.com/tabwarden/tabwarden/hack/seccomp

go 1.24

require (
	github.com/moby/profiles/seccomp v0.3.0
	github.com/opencontainers/runtime-spec v1.2.1
)

require golang.org/x/sys v0.33.0 // indirect
