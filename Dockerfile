# syntax=docker/dockerfile:1
# gw's container image for people who build with Docker or BuildKit. CI does
# not build this file (there is no Docker daemon there): CI builds and tests
# the same image with `make image` (deploy/image, go-containerregistry),
# whose layout this Dockerfile mirrors line for line — same base files, user,
# paths, environment, entrypoint, command, health check and labels. See
# docs/DEPLOY.md ("Image").
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t gw .

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The same flags as deploy/image.BuildBinary: static, no build paths, no
# symbol table or DWARF, version stamped.
RUN CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/usr/local/bin/gw ./cmd/gw
# The distroless-style base, the files deploy/image.baseFiles writes.
RUN set -eu; r=/out; \
    mkdir -p $r/etc/gw $r/etc/ssl/certs $r/home/nonroot $r/root $r/tmp $r/var/lib/gw; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > $r/etc/passwd; \
    printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > $r/etc/group; \
    printf 'hosts: files dns\n' > $r/etc/nsswitch.conf; \
    cp /etc/ssl/certs/ca-certificates.crt $r/etc/ssl/certs/ca-certificates.crt; \
    chmod 1777 $r/tmp; chmod 700 $r/root $r/home/nonroot $r/var/lib/gw; \
    chown 65532:65532 $r/home/nonroot $r/var/lib/gw

FROM scratch
ARG VERSION=dev
ARG REVISION=
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /out/ /
USER 65532:65532
WORKDIR /home/nonroot
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    GW_LISTEN=0.0.0.0:8080 \
    GW_DATA_DIR=/var/lib/gw
EXPOSE 8080/tcp
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/usr/local/bin/gw", "healthcheck"]
LABEL org.opencontainers.image.title="gw" \
      org.opencontainers.image.description="gw, a high-performance AI gateway" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="scratch" \
      org.opencontainers.image.documentation="docs/DEPLOY.md"
ENTRYPOINT ["/usr/local/bin/gw"]
CMD ["serve", "--resources-file", "/etc/gw/gw.yaml"]
