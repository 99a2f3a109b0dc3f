# The tabwarden image: one static binary, /tabwarden, for the controller and the agent
# (config/manager, config/agent). Build it with `make image IMAGE=<registry>/tabwarden TAG=<tag>`.
# test/deploy checks this file (bases pinned by digest, non-root user) and runs its go build.
#
# Each base is named by tag and digest: the digest decides what is pulled, the tag
# says what it is. To move a base, resolve its tag with a registry client and
# replace the digest, e.g.
#   crane digest golang:1.26-bookworm
#   crane digest gcr.io/distroless/static-debian12:nonroot
# (or docker buildx imagetools inspect <image>). The digests below are the
# multi-arch indexes public Dockerfiles pinned for these tags in 2026; they were
# not resolved against the registries from tabwarden's test machines, which
# reach none.

# Builder: the Go toolchain of go.mod.
FROM golang:1.26-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tabwarden ./cmd/tabwarden

# Runtime: no shell, no package manager; CA certificates and user nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/tabwarden /tabwarden
USER 65532:65532
ENTRYPOINT ["/tabwarden"]
