#!/bin/sh

# entrypoint.sh -- the container's command: writes the FTP passive ports
# and the external address from the environment into the file the
# configuration includes, then runs siftpd in the foreground (the master
# and its workers, the log on stderr).  Arguments go to siftpd: "-t"
# tests the configuration, "user add NAME" adds a user.
#
#   SIFTPD_PASSIVE_PORTS     MIN-MAX, the FTP data ports the container
#                            publishes (default 30000-30009)
#   SIFTPD_EXTERNAL_ADDRESS  the IPv4 address PASV names to clients, the
#                            one they reach the host on (default none:
#                            the container's own)
#   SIFTPD_CONF, SIFTPD_RUN_DIR, SIFTPD_BINARY
#                            the configuration, the directory of the file
#                            written here, the binary (defaults
#                            /etc/siftpd/siftpd.conf, /run/siftpd,
#                            /usr/sbin/siftpd)

set -e

conf=${SIFTPD_CONF:-/etc/siftpd/siftpd.conf}
run=${SIFTPD_RUN_DIR:-/run/siftpd}
siftpd=${SIFTPD_BINARY:-/usr/sbin/siftpd}
ports=${SIFTPD_PASSIVE_PORTS:-30000-30009}
address=${SIFTPD_EXTERNAL_ADDRESS:-}

fail() {
    echo "entrypoint.sh: $*" >&2
    exit 1
}

# the values go into the configuration: digits and their separators only
echo "$ports" | grep -Eqx '[0-9]{1,5}-[0-9]{1,5}' \
    || fail "SIFTPD_PASSIVE_PORTS \"$ports\" is not MIN-MAX"
[ -z "$address" ] || echo "$address" \
    | grep -Eqx '[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}' \
    || fail "SIFTPD_EXTERNAL_ADDRESS \"$address\" is not an IPv4 address"

# a volume mounted over /etc/siftpd hides the image's configuration
[ -f "$conf" ] || cp /usr/share/siftpd/container/siftpd.conf "$conf"

mkdir -p "$run"
{
    echo "# written by entrypoint.sh from the environment"
    echo "passive_ports  $ports;"
    [ -z "$address" ] || echo "pasv_address  $address;"
} > "$run/ftp.conf"

exec "$siftpd" -g 'daemon off; master_process on;' -c "$conf" "$@"
