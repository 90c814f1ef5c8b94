# Dockerfile -- siftpd in a container: the Debian packages built from this
# tree (debian/), installed on Debian 12, run in the foreground with the
# log on stderr by pkg/docker/entrypoint.sh (docs/install.md).
#
#   docker build -t siftpd .
#   docker run -d --name siftpd -p 21:21 -p 990:990 -p 2222:22 \
#       -p 30000-30009:30000-30009 -e SIFTPD_EXTERNAL_ADDRESS=203.0.113.5 \
#       -v siftpd-etc:/etc/siftpd -v siftpd-data:/var/lib/siftpd siftpd
#   docker logs siftpd        # the first user's password

FROM debian:12 AS build

COPY . /src
WORKDIR /src
RUN apt-get update \
    && auto/deps \
    && apt-get install -y -qq --no-install-recommends debhelper dpkg-dev \
    && DEB_BUILD_OPTIONS="nocheck noautodbgsym" dpkg-buildpackage -us -uc -b \
    && mkdir /debs && mv ../siftpd_*.deb ../siftpd-mod-*.deb /debs/


FROM debian:12-slim

COPY --from=build /debs /tmp/debs
RUN apt-get update \
    && apt-get install -y -qq --no-install-recommends /tmp/debs/siftpd_*.deb \
    && rm -rf /tmp/debs /var/lib/apt/lists/*

COPY pkg/docker/siftpd.conf /usr/share/siftpd/container/siftpd.conf
COPY pkg/docker/siftpd.conf /etc/siftpd/siftpd.conf
COPY pkg/docker/entrypoint.sh /usr/sbin/siftpd-entrypoint

ENV SIFTPD_PASSIVE_PORTS=30000-30009 SIFTPD_EXTERNAL_ADDRESS=

# FTP, implicit FTPS, SFTP, the admin HTTP endpoint, the passive ports
EXPOSE 21 990 22 8080 30000-30009

VOLUME ["/etc/siftpd", "/var/lib/siftpd"]

STOPSIGNAL SIGQUIT
ENTRYPOINT ["/usr/sbin/siftpd-entrypoint"]
