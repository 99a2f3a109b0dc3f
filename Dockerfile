# The tabwarden image: one static binary, /tabwarden, for the controller and the agent
# (config/manager, config/agent). Build it with `make image IMAGE=<registry>/tabwarden TAG=<tag>`.
# test/deploy checks this file (pinned bases, non-root user) and runs its go build.

# Builder: the Go toolchain of go.mod.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tabwarden ./cmd/tabwarden

# Runtime: no shell, no package manager; CA certificates and user nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tabwarden /tabwarden
USER 65532:65532
ENTRYPOINT ["/tabwarden"]
