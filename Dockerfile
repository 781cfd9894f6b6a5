# Build the controller binary.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Copy the Go module manifests and download the dependencies first, so that a
# change to the source does not invalidate the cached module layer.
COPY go.mod go.mod
COPY go.sum go.sum
RUN go mod download

# Copy the Go source.
COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY pkg/ pkg/

# GOARCH has no default, so the binary is built for the platform of the image
# (docker's TARGETARCH), or of the host when building without buildx.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags=-s -o manager .

# Use distroless as minimal base image to package the controller binary.
# Refer to https://github.com/GoogleContainerTools/distroless for more details.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
