#!/usr/bin/env bash
# bench/run.sh - side-by-side benchmark lab: siftpd vs vsftpd, ProFTPD,
# Pure-FTPd (FTP/FTPS) and OpenSSH (SFTP); siftpd's S3 driver vs rclone
# serve ftp/sftp on one S3 backend (moto_server, or a Ceph radosgw of the
# lab's own: S3_BACKEND); on request siftpd's PostgreSQL user
# store against its users file, and two siftpd nodes behind HAProxy against
# one.  Installs the peers from Debian
# without starting system services, starts every server on 127.0.0.1 high
# ports with its own config in a private tmpfs, builds siftpd (release),
# runs bench/bench.py against each in turn, and stops everything it started
# by pid - also on ^C (trap).  Results: bench/results/<arch>.{json,md,svg}.
#
# usage: bash bench/run.sh [--quick] [--only ROW_REGEX] [--servers a,b,..]
#                          [--no-build] [--no-install] [--keep-lab] [--hold SECS]
#   servers: siftpd,vsftpd,proftpd,pureftpd,openssh,rclone (default: these),
#            siftpd-pg (users in a PostgreSQL of the lab's own, and its
#            cache-off twin), siftpd-fleet (two nodes behind HAProxy),
#            siftpd-fleet1 (one of them through the same HAProxy): only when
#            named, they need postgresql / haproxy
#   env: RCLONE=/path/to/rclone (default: rclone from PATH, Debian's package),
#        S3_BACKEND=moto|ceph (the S3 rows' backend, default moto: moto_server,
#        a single Python process, which bounds the rows' throughput; ceph: a
#        cluster of the lab's own started by bench/ceph_lab.py - one monitor,
#        one memstore OSD of CEPH_MEMSTORE_GIB (8) GiB, radosgw - from the
#        packages `auto/deps --test` unpacks in CEPH_ROOT
#        (/var/cache/siftp-tests/ceph); without them the S3 rows are n/a),
#        MOTO_SERVER=/path/to/moto_server (default: from PATH; without it the
#        S3 rows on moto are n/a),
#        SIFTPD=/path/to/siftpd (skips the build; default: a release build of
#        the working tree in $BENCH_CACHE/build), BENCH_PORT_BASE (24000),
#        BENCH_CACHE (/var/cache/siftp-bench: downloaded .debs, private roots),
#        SIFTPD_CONF_MAIN / SIFTPD_CONF_FTP (directives added to siftpd's main
#        level / ftp server block, e.g. 'events { io_uring on; }', 'sendfile off;'),
#        SIFTPD_API=0 (no admin listener and no api row: for binaries that predate
#        the current token file format)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
PY=${PYTHON:-python3}
CACHE=${BENCH_CACHE:-/var/cache/siftp-bench}
PRIV=$CACHE/root                      # private unpack of conflicting ftp servers
BASE=${BENCH_PORT_BASE:-24000}        # below the ephemeral range (32768+)
BENCH_USER=siftpbench
ALL_SERVERS=siftpd,vsftpd,proftpd,pureftpd,openssh,rclone
FLEET_SERVERS=siftpd-pg,siftpd-fleet,siftpd-fleet1   # only when named in --servers
SERVERS=$ALL_SERVERS
BENCH_ARGS=()
DO_BUILD=1 DO_INSTALL=1 KEEP_LAB=0 QUICK=0 HOLD=0

die() { echo "run.sh: $*" >&2; exit 1; }
say() { echo "== $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; BENCH_ARGS+=(--quick) ;;
    --only) [ $# -ge 2 ] || die "--only needs a pattern"; BENCH_ARGS+=(--only "$2"); shift ;;
    --only=*) BENCH_ARGS+=(--only "${1#*=}") ;;
    --servers) [ $# -ge 2 ] || die "--servers needs a list"; SERVERS=$2; shift ;;
    --servers=*) SERVERS=${1#*=} ;;
    --no-build) DO_BUILD=0 ;;
    --no-install) DO_INSTALL=0 ;;
    --keep-lab) KEEP_LAB=1 ;;
    --hold) [ $# -ge 2 ] || die "--hold needs seconds"; HOLD=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#'; exit 0 ;;
    *) die "unknown option: $1 (see --help)" ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || die "must run as root (installs packages, binds ftp servers, switches users)"
for s in ${SERVERS//,/ }; do
  case ",$ALL_SERVERS,$FLEET_SERVERS," in *",$s,"*) ;; *) die "unknown server '$s' (known: $ALL_SERVERS,$FLEET_SERVERS)" ;; esac
done
want() { case ",$SERVERS," in *",$1,"*) return 0 ;; esac; return 1; }
want_fleet() { want siftpd-fleet || want siftpd-fleet1; }
want_siftpd() { want siftpd || want siftpd-pg || want_fleet; }   # any instance of the build

# ---------------------------------------------------------------- ports
P_SIFTPD_FTP=$((BASE + 21))  P_SIFTPD_SFTP=$((BASE + 22)) P_SIFTPD_HTTP=$((BASE + 80))
P_NOCACHE_FTP=$((BASE + 31)) P_NOCACHE_SFTP=$((BASE + 32))
P_VSFTPD=$((BASE + 121)) P_PROFTPD=$((BASE + 221)) P_PURE=$((BASE + 321))
P_SSHD=$((BASE + 422)) P_IPERF=$((BASE + 500))
P_S3_FTP=$((BASE + 41)) P_S3_SFTP=$((BASE + 42)) P_S3_HTTP=$((BASE + 81))
P_RCLONE_FTP=$((BASE + 521)) P_RCLONE_SFTP=$((BASE + 522))
P_S3=$((BASE + 600))                  # the S3 backend: moto, or radosgw
P_CEPH_MON=$((BASE + 601)) P_CEPH_OSD="$((BASE + 602)) $((BASE + 609))"  # ceph: the monitor, the OSD's range
P_PG_FTP=$((BASE + 51)) P_PG_SFTP=$((BASE + 52)) P_PGNC_FTP=$((BASE + 61)) P_PGNC_SFTP=$((BASE + 62))
P_PGSQL=$((BASE + 700))
# HAProxy on 127.0.0.1: both nodes round-robin, and node 1 alone; the nodes on addresses of their own
P_FLEET=$((BASE + 71)) P_FLEET1=$((BASE + 72)) P_NODE=$((BASE + 73))
FLEET_NODES="127.0.0.11 127.0.0.12"
# passive ranges: disjoint, 600 ports each (Pure-FTPd allows half its range as clients)
PASV_SIFTPD="$((BASE + 1000)) $((BASE + 1599))"
PASV_NOCACHE="$((BASE + 1600)) $((BASE + 2199))"
PASV_VSFTPD="$((BASE + 2200)) $((BASE + 2799))"
PASV_PROFTPD="$((BASE + 2800)) $((BASE + 3399))"
PASV_PURE="$((BASE + 3400)) $((BASE + 3999))"
PASV_S3="$((BASE + 4000)) $((BASE + 4599))"
PASV_RCLONE="$((BASE + 4600)) $((BASE + 5199))"
PASV_PG="$((BASE + 5200)) $((BASE + 5799))"
PASV_PGNC="$((BASE + 5800)) $((BASE + 6399))"
PASV_NODE=("$((BASE + 6400)) $((BASE + 6599))" "$((BASE + 6600)) $((BASE + 6799))")  # each node's, forwarded by HAProxy

listen_pids() {  # pids listening on TCP port $1 (any address); none: empty, not a failure
  { ss -Htlnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u | tr '\n' ' '; } || true
}
port_busy() { [ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]; }

# ---------------------------------------------------------------- cleanup
SUP_PIDS=()          # supervise.py pids, one per server
HOLD_PID="" BENCH_PID=""
LAB="" LAB_MOUNTED=0 USER_CREATED=0 PAM_CREATED=0
PAM_SVC=/etc/pam.d/siftp-bench
POLICY=/usr/sbin/policy-rc.d POLICY_CREATED=0 POLICY_SAVED=""

stop_pid() {  # TERM, wait up to 6 s, then KILL - one pid
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  set +e
  [ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null
  if [ -n "$BENCH_PID" ]; then  # bench.py writes what it has measured, then exits
    kill -TERM "$BENCH_PID" 2>/dev/null
    for i in $(seq 1 100); do kill -0 "$BENCH_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BENCH_PID" 2>/dev/null
  fi
  for pid in "${SUP_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${SUP_PIDS[@]}"; do stop_pid "$pid"; done
  # a supervisor that had to be KILLed leaves its server: stop the server by its pid
  if [ -n "$LAB" ] && [ -d "$LAB/run" ]; then
    for f in "$LAB"/run/*.sup; do
      [ -f "$f" ] || continue
      read -r _ spid < "$f"
      [ -n "${spid:-}" ] && kill -0 "$spid" 2>/dev/null && stop_pid "$spid"
    done
  fi
  policy_restore
  if [ "$PAM_CREATED" = 1 ]; then rm -f "$PAM_SVC"; fi
  if [ "$USER_CREATED" = 1 ]; then userdel "$BENCH_USER" 2>/dev/null; fi
  if [ -n "$LAB" ] && [ "$KEEP_LAB" = 0 ]; then
    if [ "$LAB_MOUNTED" = 1 ]; then umount "$LAB" 2>/dev/null || umount -l "$LAB"; fi
    rm -rf "$LAB"
  elif [ -n "$LAB" ]; then
    echo "lab kept in $LAB (unmount and remove it by hand)" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- installing
policy_block() {  # make invoke-rc.d refuse to start services during installs
  POLICY_CREATED=0 POLICY_SAVED=""
  if [ -e "$POLICY" ]; then
    local rc=0
    "$POLICY" siftp-bench-probe start >/dev/null 2>&1 || rc=$?
    [ "$rc" = 101 ] && return 0
    POLICY_SAVED=$POLICY.siftp-bench-saved
    mv "$POLICY" "$POLICY_SAVED"
  fi
  printf '#!/bin/sh\n# temporary, from siftp bench/run.sh: no service starts during its installs\nexit 101\n' > "$POLICY"
  chmod 755 "$POLICY"
  POLICY_CREATED=1
}
policy_restore() {
  if [ "$POLICY_CREATED" = 1 ]; then rm -f "$POLICY"; POLICY_CREATED=0; fi
  if [ -n "$POLICY_SAVED" ]; then mv "$POLICY_SAVED" "$POLICY"; POLICY_SAVED=""; fi
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

apt_install() {  # install the missing ones of "$@"; never starts a service
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "apt-get install ${missing[*]}"
  local before22; before22=$(listen_pids 22)
  policy_block
  local rc=0
  RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive timeout 900 \
    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 || rc=$?
  if [ "$rc" != 0 ]; then
    timeout 600 apt-get update -q >&2 || true
    rc=0
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive timeout 900 \
      apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 || rc=$?
  fi
  policy_restore
  # if this install started an sshd on port 22 anyway, stop exactly that one
  local pid
  for pid in $(listen_pids 22); do
    case " $before22 " in *" $pid "*) continue ;; esac
    if [ "$pid" = 1 ] && [ -d /run/systemd/system ]; then
      say "the install socket-activated ssh on :22; stopping and masking it"
      systemctl stop ssh.socket ssh.service || true
      systemctl mask ssh.socket ssh.service || true
    elif [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sshd ]; then
      say "the install started sshd (pid $pid) on :22; stopping it"
      if [ -d /run/systemd/system ]; then
        systemctl stop ssh.service || true; systemctl mask ssh.service || true
      fi
      stop_pid "$pid"
    fi
  done
  [ "$rc" = 0 ] || die "apt-get install ${missing[*]} failed"
}

ftp_server_installed() {  # is any package providing ftp-server installed?
  dpkg-query -W -f='${Status}|${Package} ${Provides}\n' 2>/dev/null \
    | grep '^install ok installed|' | grep -qw 'ftp-server'
}

unpack_private() {  # apt-get download + dpkg-deb -x "$@" into $PRIV; install their lib deps
  local p deb deps
  mkdir -p "$CACHE/debs" "$PRIV"
  for p in "$@"; do
    deb=$(ls "$CACHE"/debs/"${p}"_*.deb 2>/dev/null | head -1 || true)
    if [ -z "$deb" ]; then
      say "apt-get download $p (private unpack: it conflicts with the installed ftp-server)"
      (cd "$CACHE/debs" && timeout 600 apt-get download -q "$p" >&2) \
        || { timeout 600 apt-get update -q >&2 || true; (cd "$CACHE/debs" && timeout 600 apt-get download -q "$p" >&2); } \
        || die "apt-get download $p failed"
      deb=$(ls "$CACHE"/debs/"${p}"_*.deb | head -1)
    fi
    if [ ! -f "$PRIV/.unpacked.$(basename "$deb")" ]; then
      dpkg-deb -x "$deb" "$PRIV"
      touch "$PRIV/.unpacked.$(basename "$deb")"
    fi
    # shared libraries it needs (libs never start services nor conflict)
    deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' | grep '^lib' || true)
    # shellcheck disable=SC2086
    [ -n "$deps" ] && apt_install $deps
  done
}

check_libs() {  # ldd must resolve everything
  local f bad=""
  for f in "$@"; do
    [ -e "$f" ] || die "missing $f"
    if ldd "$f" 2>/dev/null | grep -q 'not found'; then bad="$bad $f"; ldd "$f" | grep 'not found' >&2; fi
  done
  [ -z "$bad" ] || die "unresolved shared libraries in:$bad"
}

pkg_version() {  # installed version, or the cached .deb's
  if installed "$1"; then dpkg-query -W -f='${Version}' "$1"
  else local deb; deb=$(ls "$CACHE"/debs/"$1"_*.deb 2>/dev/null | head -1)
       [ -n "$deb" ] && dpkg-deb -f "$deb" Version || echo unknown; fi
}

VSFTPD_BIN="" PROFTPD_BIN="" PROFTPD_MODS="" PURE_BIN=""
if [ "$DO_INSTALL" = 1 ]; then
  apt_install curl openssh-client openssh-server openssl iperf3 iproute2 libpam-modules
  # vsftpd, proftpd and pure-ftpd conflict (each provides ftp-server): install
  # vsftpd when no ftp server is installed, unpack the others privately
  if want vsftpd && ! installed vsftpd && ! ftp_server_installed; then apt_install vsftpd; fi
  if want vsftpd && ! installed vsftpd; then unpack_private vsftpd; fi
  if want proftpd; then
    installed proftpd-core || unpack_private proftpd-core
    installed proftpd-mod-crypto || unpack_private proftpd-mod-crypto
  fi
  if want pureftpd && ! installed pure-ftpd; then unpack_private pure-ftpd; fi
  if want rclone && [ -z "${RCLONE:-}" ]; then apt_install rclone; fi
  if want siftpd-pg; then apt_install postgresql postgresql-client; fi
  if want_fleet; then apt_install haproxy; fi
fi
for t in curl sftp ssh ssh-keygen openssl ss; do command -v "$t" >/dev/null || die "$t not found"; done
if want vsftpd; then
  if installed vsftpd; then VSFTPD_BIN=/usr/sbin/vsftpd; else VSFTPD_BIN=$PRIV/usr/sbin/vsftpd; fi
  check_libs "$VSFTPD_BIN"
fi
if want proftpd; then
  if installed proftpd-core; then PROFTPD_BIN=/usr/sbin/proftpd; else PROFTPD_BIN=$PRIV/usr/sbin/proftpd; fi
  if installed proftpd-mod-crypto; then PROFTPD_MODS=/usr/lib/proftpd; else PROFTPD_MODS=$PRIV/usr/lib/proftpd; fi
  check_libs "$PROFTPD_BIN" "$PROFTPD_MODS/mod_tls.so"
fi
if want pureftpd; then
  if installed pure-ftpd; then PURE_BIN=/usr/sbin/pure-ftpd; else PURE_BIN=$PRIV/usr/sbin/pure-ftpd; fi
  check_libs "$PURE_BIN"
fi
want openssh && { [ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd missing (install openssh-server)"; }
# the S3 rows: rclone (the peer) and the backend (moto_server or Ceph); a
# missing one makes those cells n/a with the reason, not a failure
RCLONE_BIN="" RCLONE_V="" RCLONE_WHY="" RCLONE_FTP=0
if want rclone; then
  RCLONE_BIN=${RCLONE:-$(command -v rclone || true)}
  if [ -z "$RCLONE_BIN" ] || [ ! -x "$RCLONE_BIN" ]; then
    RCLONE_WHY="rclone not installed"
  else
    RCLONE_V=$("$RCLONE_BIN" version 2>/dev/null | head -1 || true)
    # Debian's rclone is built without serve ftp (its FTP server library is not packaged)
    if "$RCLONE_BIN" serve --help 2>/dev/null | grep -qE '^ +ftp +'; then RCLONE_FTP=1; fi
  fi
fi
S3_BACKEND=${S3_BACKEND:-moto} S3_WHY="" S3_V=""
case "$S3_BACKEND" in
  moto)
    MOTO_BIN=${MOTO_SERVER:-$(command -v moto_server || true)}
    if [ -z "$MOTO_BIN" ] || [ ! -x "$MOTO_BIN" ]; then
      S3_WHY="moto_server not installed"
    else
      S3_V=$("$PY" -c 'import moto; print(moto.__version__)' 2>/dev/null || echo unknown)
    fi ;;
  ceph)  # the version, or why there is no Ceph
    S3_V=$("$PY" "$HERE/ceph_lab.py" version 2>&1) || { S3_WHY=$S3_V S3_V=""; } ;;
  *) die "S3_BACKEND=$S3_BACKEND: moto or ceph" ;;
esac

# ---------------------------------------------------------------- siftpd build
# Release build (./configure && make) of the working tree, done in a private
# copy under $CACHE/build so the shared tree's Makefile and objs/ (other
# people's debug/sanitizer configurations) are never touched.  SIFTPD=path
# skips the build and uses that binary.
SIFTPD_V="" SIFTPD_FTP=0 SIFTPD_SFTP=0 SIFTPD_TLS=0 SIFTPD_WHY="not built"
BUILD=$CACHE/build
if [ -n "${SIFTPD:-}" ]; then
  DO_BUILD=0
else
  SIFTPD=$BUILD/objs/siftpd
fi
if want_siftpd; then
  if [ "$DO_BUILD" = 1 ] && [ -x "$ROOT/configure" ]; then
    say "building siftpd (release) in $BUILD: ./configure && make"
    mkdir -p "$BUILD"
    # tracked and new files of the working tree, as they are now (mtimes kept: make stays incremental)
    if ! (cd "$ROOT" && git ls-files -z -co --exclude-standard \
          | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$BUILD"; then
      say "warning: copying the working tree was incomplete (files changing under us?)"
    fi
    cfg=()
    mods=$("$BUILD/configure" --help 2>/dev/null | sed -n 's/^ *modules: *//p' | tr ',' ' ' || true)
    for m in $mods; do case "$m" in ftp|sftp) cfg+=("--with-${m}_module") ;; esac; done
    if [ ! -x "$BUILD/configure" ] || ! (cd "$BUILD" && timeout 600 ./configure "${cfg[@]}" && timeout 1800 make -j"$(nproc)") > "$CACHE/build.log" 2>&1; then
      tail -20 "$CACHE/build.log" >&2
      SIFTPD_WHY="build failed"
      SIFTPD=/nonexistent
    fi
  fi
  if [ -x "$SIFTPD" ]; then
    SIFTPD_V=$("$SIFTPD" -V 2>&1 || true)
    grep -qE -- '--with-ftp_module|sft_ftp_module' <<<"$SIFTPD_V" && SIFTPD_FTP=1
    grep -qE -- '--with-sftp_module|sft_sftp_module' <<<"$SIFTPD_V" && SIFTPD_SFTP=1
    [ "$SIFTPD_FTP" = 1 ] && grep -qiE -- 'openssl|--with-ftps|ftp_ssl|ftps_module' <<<"$SIFTPD_V" && SIFTPD_TLS=1
  fi
  say "siftpd: $SIFTPD ftp=$SIFTPD_FTP sftp=$SIFTPD_SFTP tls=$SIFTPD_TLS"
fi

# ---------------------------------------------------------------- the lab
for p in $P_SIFTPD_FTP $P_SIFTPD_SFTP $P_SIFTPD_HTTP $P_NOCACHE_FTP $P_NOCACHE_SFTP $P_VSFTPD $P_PROFTPD $P_PURE $P_SSHD $P_IPERF \
         $P_S3_FTP $P_S3_SFTP $P_S3_HTTP $P_RCLONE_FTP $P_RCLONE_SFTP $P_S3 $P_CEPH_MON $(seq $P_CEPH_OSD) \
         $P_PG_FTP $P_PG_SFTP $P_PGNC_FTP $P_PGNC_SFTP $P_PGSQL $P_FLEET $P_FLEET1 $P_NODE; do
  port_busy "$p" && die "port $p is in use (set BENCH_PORT_BASE)"
done
LAB=$(mktemp -d /dev/shm/siftp-bench.XXXXXX)
# 10g: 1 GiB transfers, and moto keeps its objects (two seeded 1 GiB ones, an
# upload's parts and the object they become) in temporary files here (Ceph
# keeps them in its OSD's memory)
if mount -t tmpfs -o size=10g,mode=0755 siftp-bench "$LAB" 2>/dev/null; then LAB_MOUNTED=1; fi
chmod 755 "$LAB"
mkdir -p "$LAB"/{run,logs,keys,data,client,empty,vsftpd,proftpd,pure,sshd,siftpd,siftpd-nocache,siftpd-s3,moto,ceph,rclone,pg,siftpd-pg,siftpd-pg-nocache,haproxy,node1,node2}
say "lab in $LAB (private tmpfs: $LAB_MOUNTED)"
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

# one local user for the peers; SHA-512 crypt (openssl passwd -6), not the OS's
# yescrypt default (~55 ms per check here), so login rows measure the servers
PASS=$(openssl rand -hex 12)
API_TOKEN=$(openssl rand -hex 24)     # siftpd's admin API, for the api row
HASH=$(openssl passwd -6 "$PASS")
if id "$BENCH_USER" >/dev/null 2>&1; then
  usermod -d "$LAB/data" -s /bin/sh -p "$HASH" "$BENCH_USER"
else
  useradd -M -d "$LAB/data" -s /bin/sh -p "$HASH" "$BENCH_USER"
  USER_CREATED=1
fi
chown "$BENCH_USER:" "$LAB/data"
if [ ! -e "$PAM_SVC" ]; then  # minimal PAM service for vsftpd (pam_unix only)
  printf '# temporary, from siftp bench/run.sh\nauth required pam_unix.so\naccount required pam_unix.so\nsession required pam_permit.so\n' > "$PAM_SVC"
  PAM_CREATED=1
fi

# TLS certificate and SSH keys
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$LAB/keys/key.pem" -out "$LAB/keys/cert.pem" 2>/dev/null
cat "$LAB/keys/cert.pem" "$LAB/keys/key.pem" > "$LAB/keys/both.pem"
chmod 600 "$LAB/keys/key.pem" "$LAB/keys/both.pem"
ssh-keygen -q -t ed25519 -N '' -f "$LAB/keys/ssh_host_ed25519_key" -C siftp-bench-host
ssh-keygen -q -t ed25519 -N '' -f "$LAB/keys/siftpd_host_ed25519_key" -C siftp-bench-siftpd-host
ssh-keygen -q -t ed25519 -N '' -f "$LAB/keys/rclone_host_ed25519_key" -C siftp-bench-rclone-host
ssh-keygen -q -t ed25519 -N '' -f "$LAB/keys/id_ed25519" -C siftp-bench-client
cp "$LAB/keys/id_ed25519.pub" "$LAB/keys/authorized_keys"

wait_port() {  # up to $2 (10) s for [ADDR:]$1 (127.0.0.1) to accept
  local i host=127.0.0.1 port=$1
  case "$1" in *:*) host=${1%:*} port=${1##*:} ;; esac
  for i in $(seq 1 $((${2:-10} * 10))); do
    (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
start_server() {  # NAME [ADDR:]PORT COMMAND...  -> runs under supervise.py, pid kept; START_WAIT: secs (10)
  local name=$1 port=$2; shift 2
  "$PY" "$HERE/supervise.py" "$LAB/run/$name.sup" "$LAB/logs/$name.log" -- "$@" &
  SUP_PIDS+=("$!")
  local i; for i in $(seq 1 50); do [ -f "$LAB/run/$name.sup" ] && break; sleep 0.1; done
  if ! wait_port "$port" "${START_WAIT:-10}"; then
    echo "---- $name log:" >&2; tail -20 "$LAB/logs/$name.log" >&2
    return 1
  fi
}
sup_pid() { [ -f "$LAB/run/$1.sup" ] && cut -d' ' -f1 "$LAB/run/$1.sup" || echo 0; }

# ---- vsftpd
if want vsftpd; then
  set -- $PASV_VSFTPD
  cat > "$LAB/vsftpd/vsftpd.conf" <<EOF
# siftp bench: vsftpd standalone on 127.0.0.1, local user, sendfile on
listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=$P_VSFTPD
background=NO
anonymous_enable=NO
local_enable=YES
write_enable=YES
local_umask=022
pasv_enable=YES
pasv_min_port=$1
pasv_max_port=$2
max_clients=1000
max_per_ip=1000
use_sendfile=YES
xferlog_enable=NO
dirmessage_enable=NO
syslog_enable=NO
vsftpd_log_file=$LAB/logs/vsftpd-xfer.log
session_support=NO
tcp_wrappers=NO
pam_service_name=siftp-bench
secure_chroot_dir=$LAB/empty
nopriv_user=nobody
seccomp_sandbox=NO
idle_session_timeout=600
data_connection_timeout=300
ssl_enable=YES
allow_anon_ssl=NO
force_local_logins_ssl=NO
force_local_data_ssl=NO
require_ssl_reuse=NO
ssl_ciphers=HIGH
rsa_cert_file=$LAB/keys/cert.pem
rsa_private_key_file=$LAB/keys/key.pem
EOF
  say "starting vsftpd on $P_VSFTPD"
  start_server vsftpd "$P_VSFTPD" "$VSFTPD_BIN" "$LAB/vsftpd/vsftpd.conf" || die "vsftpd did not start"
fi

# ---- proftpd
if want proftpd; then
  set -- $PASV_PROFTPD
  cat > "$LAB/proftpd/proftpd.conf" <<EOF
# siftp bench: ProFTPD standalone on 127.0.0.1, local user, sendfile on, mod_tls
ServerName "siftp-bench proftpd"
ServerType standalone
DefaultAddress 127.0.0.1
SocketBindTight on
Port $P_PROFTPD
PassivePorts $1 $2
UseIPv6 off
User nobody
Group nogroup
Umask 022
AllowOverwrite on
MaxInstances 1000
UseReverseDNS off
UseSendfile on
WtmpLog off
UseLastlog off
TransferLog NONE
RequireValidShell off
AuthOrder mod_auth_unix.c
PidFile $LAB/proftpd/proftpd.pid
ScoreboardFile $LAB/proftpd/proftpd.scoreboard
SystemLog $LAB/logs/proftpd-system.log
ModulePath $PROFTPD_MODS
<IfModule mod_delay.c>
  DelayEngine off
</IfModule>
<IfModule mod_ctrls.c>
  ControlsEngine off
</IfModule>
<IfModule mod_dso.c>
  LoadModule mod_tls.c
</IfModule>
<IfModule mod_tls.c>
  TLSEngine on
  TLSProtocol TLSv1.2 TLSv1.3
  TLSRSACertificateFile $LAB/keys/cert.pem
  TLSRSACertificateKeyFile $LAB/keys/key.pem
  TLSVerifyClient off
  TLSRequired off
  TLSOptions NoSessionReuseRequired
</IfModule>
EOF
  say "starting proftpd on $P_PROFTPD"
  start_server proftpd "$P_PROFTPD" "$PROFTPD_BIN" -n -q -c "$LAB/proftpd/proftpd.conf" || die "proftpd did not start"
fi

# ---- pure-ftpd (clients are capped at half the passive range: 600 ports -> 300)
if want pureftpd; then
  set -- $PASV_PURE
  say "starting pure-ftpd on $P_PURE"
  start_server pureftpd "$P_PURE" "$PURE_BIN" -S "127.0.0.1,$P_PURE" -p "$1:$2" -l unix -E -H -4 \
    -c 290 -C 290 -u 1 -f none -I 600 -Y 1 -2 "$LAB/keys/cert.pem,$LAB/keys/key.pem" \
    -g "$LAB/pure/pure-ftpd.pid" || die "pure-ftpd did not start"
fi

# ---- OpenSSH sshd (SFTP via internal-sftp: no exec per session)
if want openssh; then
  mkdir -p /run/sshd && chmod 755 /run/sshd   # privsep dir sshd requires
  cat > "$LAB/sshd/sshd_config" <<EOF
# siftp bench: OpenSSH sshd on 127.0.0.1, key auth only, internal-sftp
ListenAddress 127.0.0.1:$P_SSHD
HostKey $LAB/keys/ssh_host_ed25519_key
PidFile $LAB/sshd/sshd.pid
AuthorizedKeysFile $LAB/keys/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PermitRootLogin no
AllowUsers $BENCH_USER
MaxStartups 300:30:600
MaxSessions 10
LogLevel ERROR
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
Subsystem sftp internal-sftp
EOF
  say "starting sshd on $P_SSHD"
  start_server openssh "$P_SSHD" /usr/sbin/sshd -D -e -f "$LAB/sshd/sshd_config" || die "sshd did not start"
fi

# ---- siftpd: two instances, the second with the login verification cache off
siftpd_add_user() {  # DIR NAME PASSWORD [STORAGE] - the one place that knows siftpd's user CLI
  local dir=$1 name=$2 pass=$3 storage=()
  [ -n "${4:-}" ] && storage=(--storage "$4")  # else the user's default, "local"
  # --perms all: the default (list,download) would refuse the upload rows
  printf '%s\n' "$pass" | "$SIFTPD" -p "$dir" -c "$dir/siftpd.conf" user add "$name" --home / --perms all \
    "${storage[@]}"
  # SFTP logs in with $LAB/keys/id_ed25519: its key goes in the user's stanza
  # (the last one in the file, so appending is enough)
  printf 'ssh_key = %s\n' "$(cat "$LAB/keys/id_ed25519.pub")" >> "$dir/users"
}
siftpd_storage() {  # local|cloud - the storage block: the lab's directory, or siftpd/ in the S3 bucket
  if [ "$1" = cloud ]; then
    echo "storage cloud { driver s3; s3_endpoint http://127.0.0.1:$P_S3; s3_bucket $S3_BUCKET;" \
      "s3_prefix siftpd/; s3_credentials file $LAB/keys/s3.credentials; }"
  else
    echo "storage local { driver posix; root $LAB/data; }"
  fi
}
write_siftpd_conf() {  # DIR FTPPORT SFTPPORT PASVLO PASVHI NOCACHE [HTTPPORT [STORAGE]]
  # SFTPPORT "": no SFTP.  From the caller's environment: USER_STORE (the
  # directive; default the users file in DIR), FTP_LISTEN (default
  # 127.0.0.1:FTPPORT), FTP_EXTRA (more directives of the ftp server block)
  local d=$1 st=${8:-local}
  {
    echo "# siftp bench: siftpd on 127.0.0.1 (generated by bench/run.sh)"
    echo "daemon off; master_process on; worker_processes 2;"
    echo "pid $d/siftpd.pid; error_log $d/error.log warn;"
    echo "${USER_STORE:-users $d/users;}"
    # the peers allow hundreds of sessions from one address; siftpd's default is 32
    echo "max_connections_per_address 1000;"
    [ "$6" = 1 ] && echo "login_cache_ttl_secs 0;"
    siftpd_storage "$st"
    [ -n "${SIFTPD_CONF_MAIN:-}" ] && echo "$SIFTPD_CONF_MAIN"
    if [ "$SIFTPD_FTP" = 1 ]; then
      printf 'ftp { server { listen %s; passive_ports %s-%s; storage %s;' "${FTP_LISTEN:-127.0.0.1:$2}" "$4" "$5" "$st"
      [ -n "${FTP_EXTRA:-}" ] && printf ' %s' "$FTP_EXTRA"
      [ "$SIFTPD_TLS" = 1 ] && printf ' ssl_certificate %s; ssl_certificate_key %s; tls_login optional; tls_data optional;' "$LAB/keys/cert.pem" "$LAB/keys/key.pem"
      [ -n "${SIFTPD_CONF_FTP:-}" ] && printf ' %s' "$SIFTPD_CONF_FTP"
      echo ' } }'
    fi
    if [ "$SIFTPD_SFTP" = 1 ] && [ -n "$3" ]; then
      # its own host key, made above; the client forces kex and cipher (bench.py), so
      # siftpd's defaults (docs/sftp.md) only have to include them
      echo "sftp { server { listen 127.0.0.1:$3; host_key $LAB/keys/siftpd_host_ed25519_key; storage $st; } }"
    fi
    if [ -n "${7:-}" ]; then
      # the admin API with an admin token, for the API latency row (and the S3
      # instance's buffer pool in use)
      printf '%s admin bench\n' "$API_TOKEN" > "$d/api_tokens"
      chmod 600 "$d/api_tokens"
      echo "http { server { listen 127.0.0.1:$7; api_token_file $d/api_tokens; } }"
    fi
  } > "$d/siftpd.conf"
}
if want siftpd && { [ "$SIFTPD_FTP" = 1 ] || [ "$SIFTPD_SFTP" = 1 ]; }; then
  for inst in siftpd siftpd-nocache; do
    d=$LAB/$inst
    if [ "$inst" = siftpd ]; then
      set -- $PASV_SIFTPD
      write_siftpd_conf "$d" "$P_SIFTPD_FTP" "$P_SIFTPD_SFTP" "$1" "$2" 0 \
        "$([ "${SIFTPD_API:-1}" = 1 ] && echo "$P_SIFTPD_HTTP")"
      port=$P_SIFTPD_FTP; [ "$SIFTPD_FTP" = 1 ] || port=$P_SIFTPD_SFTP
    else
      set -- $PASV_NOCACHE; write_siftpd_conf "$d" "$P_NOCACHE_FTP" "$P_NOCACHE_SFTP" "$1" "$2" 1
      port=$P_NOCACHE_FTP; [ "$SIFTPD_FTP" = 1 ] || port=$P_NOCACHE_SFTP
    fi
    if ! siftpd_add_user "$d" "$BENCH_USER" "$PASS" > "$LAB/logs/$inst-useradd.log" 2>&1; then
      cat "$LAB/logs/$inst-useradd.log" >&2
      SIFTPD_FTP=0 SIFTPD_SFTP=0 SIFTPD_TLS=0 SIFTPD_WHY="user add failed"; break
    fi
    say "starting $inst"
    if ! start_server "$inst" "$port" "$SIFTPD" -p "$d" -c "$d/siftpd.conf"; then
      SIFTPD_FTP=0 SIFTPD_SFTP=0 SIFTPD_TLS=0 SIFTPD_WHY="failed to start"; break
    fi
  done
fi

# ---- siftpd-pg: siftpd's PostgreSQL user store, on a PostgreSQL of the lab's
# own (initdb and postgres as nobody, trust on 127.0.0.1, the data on the
# tmpfs); siftpd makes the schema, the bench user goes in by SQL.  Its
# cache-off twin, siftpd-pg-nocache, serves the first-login rows.
PG_WHY="not wanted" PG_V=""
PG_AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
pg_sql() {  # SQL - on the lab's PostgreSQL; the rows, unaligned
  psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$P_PGSQL" -U siftp -d postgres -c "$1"
}
pg_add_user() {  # NAME PASSWORD - the bench user in siftpd's tables, as siftpd_add_user makes it
  local hash; hash=$(printf '%s\n' "$2" | "$SIFTPD" hash-password) || return 1
  pg_sql "INSERT INTO siftp_users (name, password, home) VALUES ('$1', '$hash', '/');
    INSERT INTO siftp_user_rules (name, path, perms) VALUES ('$1', '/', 'all');
    INSERT INTO siftp_user_keys (name, ssh_key) VALUES ('$1', '$(cat "$LAB/keys/id_ed25519.pub")');"
}
if ! want siftpd-pg; then :
elif [ "$SIFTPD_FTP" != 1 ]; then PG_WHY=$SIFTPD_WHY
else
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/postgres" ] || ! command -v psql >/dev/null; then
    PG_WHY="PostgreSQL not installed (postgresql, postgresql-client)"
  else
    PG_V=$("$PG_BIN/postgres" --version)
    chown nobody: "$LAB/pg"
    if ! "${PG_AS[@]}" "$PG_BIN/initdb" -D "$LAB/pg" -U siftp -A trust -E UTF8 --locale=C \
         --no-sync --no-instructions > "$LAB/logs/initdb.log" 2>&1; then
      tail -5 "$LAB/logs/initdb.log" >&2
      PG_WHY="initdb failed"
    else
      say "starting postgres on $P_PGSQL"
      START_WAIT=60 start_server postgres "$P_PGSQL" "${PG_AS[@]}" "$PG_BIN/postgres" -D "$LAB/pg" \
        -c listen_addresses=127.0.0.1 -p "$P_PGSQL" -k "$LAB/pg" -c fsync=off \
        && PG_WHY="" || PG_WHY="postgres did not start"
    fi
  fi
fi
PG_CONNINFO="host=127.0.0.1 port=$P_PGSQL dbname=postgres user=siftp sslmode=disable gssencmode=disable connect_timeout=5"
for inst in siftpd-pg siftpd-pg-nocache; do
  [ -z "$PG_WHY" ] || break
  d=$LAB/$inst
  if [ "$inst" = siftpd-pg ]; then
    set -- $PASV_PG; ftp=$P_PG_FTP sftp=$P_PG_SFTP nocache=0
  else
    set -- $PASV_PGNC; ftp=$P_PGNC_FTP sftp=$P_PGNC_SFTP nocache=1
  fi
  USER_STORE="user_store postgresql \"$PG_CONNINFO\";" write_siftpd_conf "$d" "$ftp" "$sftp" "$1" "$2" "$nocache"
  say "starting $inst"
  if ! start_server "$inst" "$ftp" "$SIFTPD" -p "$d" -c "$d/siftpd.conf"; then
    PG_WHY="$inst failed to start"
  elif [ "$inst" = siftpd-pg ]; then  # the first one makes the schema: then the user, then the twin
    for i in $(seq 1 300); do
      [ -n "$(pg_sql 'SELECT max(version) FROM siftp_schema_version' 2>/dev/null)" ] && break
      sleep 0.1
    done
    pg_add_user "$BENCH_USER" "$PASS" > "$LAB/logs/siftpd-pg-useradd.log" 2>&1 \
      || { cat "$LAB/logs/siftpd-pg-useradd.log" >&2; PG_WHY="user add failed"; }
  fi
done

# ---- siftpd-fleet: two siftpd nodes (users file, the lab's data directory)
# behind HAProxy with PROXY protocol v2 as docs/fleet.md sets them up: the
# control port round-robin, each node's passive range forwarded to it.
# siftpd-fleet1: node 1 alone through a second frontend of the same HAProxy.
FLEET_WHY="not wanted"
if ! want_fleet; then :
elif [ "$SIFTPD_FTP" != 1 ]; then FLEET_WHY=$SIFTPD_WHY
elif ! HAPROXY_BIN=$(command -v haproxy || command -v /usr/sbin/haproxy); then FLEET_WHY="haproxy not installed"
else
  FLEET_WHY=""
  hap_nodes="" hap_pasv="" i=0
  for addr in $FLEET_NODES; do
    i=$((i + 1)) d=$LAB/node$i
    set -- ${PASV_NODE[$((i - 1))]}
    FTP_LISTEN="$addr:$P_NODE proxy_protocol" FTP_EXTRA="proxy_protocol_from 127.0.0.1; pasv_address proxy;" \
      write_siftpd_conf "$d" "$P_NODE" "" "$1" "$2" 0
    if ! siftpd_add_user "$d" "$BENCH_USER" "$PASS" > "$LAB/logs/node$i-useradd.log" 2>&1; then
      cat "$LAB/logs/node$i-useradd.log" >&2; FLEET_WHY="user add failed"; break
    fi
    say "starting fleet node $i on $addr:$P_NODE"
    start_server "node$i" "$addr:$P_NODE" "$SIFTPD" -p "$d" -c "$d/siftpd.conf" || { FLEET_WHY="node $i failed to start"; break; }
    hap_nodes+="    server n$i $addr:$P_NODE send-proxy-v2"$'\n'
    hap_pasv+="frontend pasv$i"$'\n'"    bind 127.0.0.1:$1-$2"$'\n'"    default_backend pasv$i"$'\n'
    hap_pasv+="backend pasv$i"$'\n'"    server n$i $addr send-proxy-v2"$'\n'
  done
  if [ -z "$FLEET_WHY" ]; then
    cat > "$LAB/haproxy/haproxy.cfg" <<EOF
# siftp bench: HAProxy before the fleet nodes (generated by bench/run.sh)
global
    maxconn 2000
defaults
    mode tcp
    source 127.0.0.1
    timeout connect 5s
    timeout client 300s
    timeout server 300s
frontend fleet
    bind 127.0.0.1:$P_FLEET
    default_backend nodes
frontend fleet1
    bind 127.0.0.1:$P_FLEET1
    default_backend node1
backend nodes
    balance roundrobin
$hap_nodes
backend node1
$(head -1 <<<"$hap_nodes")
$hap_pasv
EOF
    say "starting haproxy on $P_FLEET (both nodes) and $P_FLEET1 (node 1)"
    start_server haproxy "$P_FLEET" "$HAPROXY_BIN" -db -f "$LAB/haproxy/haproxy.cfg" || FLEET_WHY="haproxy did not start"
  fi
fi

# ---- the S3 backend of the S3 rows (moto_server or Ceph), one bucket, a
# prefix per server; siftpd, rclone and bench.py get the same keys (moto
# takes any, Ceph's radosgw gets a user with them) and sign with them
S3_BUCKET=bench S3_UP=0 S3_REGION=us-east-1
S3_KEY=siftpbench S3_SECRET=$(openssl rand -hex 20)
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$S3_KEY" "$S3_SECRET" > "$LAB/keys/s3.credentials"
chmod 600 "$LAB/keys/s3.credentials"
s3_put() {  # PATH [FILE] - a PUT of FILE (or nothing) to the backend, signed (SigV4, payload unsigned)
  curl -sSf --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_KEY:$S3_SECRET" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
    -o /dev/null -T "${2:-/dev/null}" "http://127.0.0.1:$P_S3/$1"
}
if [ -n "$S3_WHY" ] || ! { want siftpd || want rclone; }; then :
elif [ "$S3_BACKEND" = ceph ]; then
  say "starting Ceph (monitor $P_CEPH_MON, OSD, radosgw on $P_S3)"
  # memstore: the full run's objects at once (two seeded 1 GiB ones, an upload
  # and the backend's own PUT, 16 uploads of 64 MiB) and what radosgw has
  # yet to collect of deleted ones
  if START_WAIT=180 start_server ceph "$P_S3" "$PY" "$HERE/ceph_lab.py" run "$LAB/ceph" "$P_CEPH_MON" "$P_S3" \
       $P_CEPH_OSD "$S3_KEY" "$S3_SECRET" $((${CEPH_MEMSTORE_GIB:-8} << 30)) \
     && s3_put "$S3_BUCKET"; then
    S3_UP=1
  else
    S3_WHY="Ceph did not start"
  fi
else
  say "starting moto_server on $P_S3"
  # the bucket keeps versions: rclone 1.60 HEADs each object it uploaded with
  # the version id the upload answered, and moto's id for an unversioned
  # bucket ("null") is one it refuses in a HEAD (400), failing every upload
  printf '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>' \
    > "$LAB/moto/versioning.xml"
  # objects over 5 MiB are temporary files: on the lab's tmpfs, gone with it
  if START_WAIT=60 start_server moto "$P_S3" env TMPDIR="$LAB/moto" "$MOTO_BIN" -H 127.0.0.1 -p "$P_S3" \
     && s3_put "$S3_BUCKET" && s3_put "$S3_BUCKET?versioning=" "$LAB/moto/versioning.xml"; then
    S3_UP=1
  else
    S3_WHY="moto_server did not start"
  fi
fi

# ---- siftpd-s3: a third instance, its storage `driver s3` on siftpd/ in the bucket
S3_SIFTPD_WHY="not wanted"
if ! want siftpd; then :
elif [ "$S3_UP" != 1 ]; then S3_SIFTPD_WHY=$S3_WHY
elif [ "$SIFTPD_FTP" != 1 ] && [ "$SIFTPD_SFTP" != 1 ]; then S3_SIFTPD_WHY=$SIFTPD_WHY
else
  d=$LAB/siftpd-s3; set -- $PASV_S3
  write_siftpd_conf "$d" "$P_S3_FTP" "$P_S3_SFTP" "$1" "$2" 0 \
    "$([ "${SIFTPD_API:-1}" = 1 ] && echo "$P_S3_HTTP")" cloud
  port=$P_S3_FTP; [ "$SIFTPD_FTP" = 1 ] || port=$P_S3_SFTP
  if ! "$SIFTPD" -p "$d" -c "$d/siftpd.conf" -t > "$LAB/logs/siftpd-s3-test.log" 2>&1; then
    tail -3 "$LAB/logs/siftpd-s3-test.log" >&2
    S3_SIFTPD_WHY="configuration refused (a build without the s3 driver?)"
  elif ! siftpd_add_user "$d" "$BENCH_USER" "$PASS" cloud > "$LAB/logs/siftpd-s3-useradd.log" 2>&1; then
    cat "$LAB/logs/siftpd-s3-useradd.log" >&2
    S3_SIFTPD_WHY="user add failed"
  else
    say "starting siftpd-s3"
    if start_server siftpd-s3 "$port" "$SIFTPD" -p "$d" -c "$d/siftpd.conf"; then S3_SIFTPD_WHY=""
    else S3_SIFTPD_WHY="failed to start"; fi
  fi
fi

# ---- rclone serve ftp / sftp on rclone/ in the bucket, --vfs-cache-mode off
RCLONE_FTP_WHY=$RCLONE_WHY RCLONE_SFTP_WHY=$RCLONE_WHY
if want rclone && [ -z "$RCLONE_WHY" ]; then
  if [ "$S3_UP" != 1 ]; then
    RCLONE_FTP_WHY=$S3_WHY RCLONE_SFTP_WHY=$S3_WHY
  else
    : > "$LAB/rclone/rclone.conf"
    # an S3 remote made on the fly (":s3:"), its options and keys from the environment
    # (without AWS_CA_BUNDLE, which rclone 1.60's AWS SDK fails on: the endpoint is http)
    rclone_env=(env -u AWS_CA_BUNDLE HOME="$LAB/rclone" XDG_CACHE_HOME="$LAB/rclone/cache" RCLONE_CONFIG="$LAB/rclone/rclone.conf"
      RCLONE_S3_PROVIDER=$([ "$S3_BACKEND" = ceph ] && echo Ceph || echo Other)
      RCLONE_S3_ENDPOINT="http://127.0.0.1:$P_S3" RCLONE_S3_REGION=$S3_REGION
      RCLONE_S3_ACCESS_KEY_ID="$S3_KEY" RCLONE_S3_SECRET_ACCESS_KEY="$S3_SECRET")
    rclone_args=(":s3:$S3_BUCKET/rclone" --vfs-cache-mode off --user "$BENCH_USER" --pass "$PASS")
    if [ "$RCLONE_FTP" != 1 ]; then
      RCLONE_FTP_WHY="${RCLONE_V:-this rclone} has no serve ftp"
    else
      set -- $PASV_RCLONE
      say "starting rclone serve ftp on $P_RCLONE_FTP"
      START_WAIT=30 start_server rclone-ftp "$P_RCLONE_FTP" "${rclone_env[@]}" "$RCLONE_BIN" serve ftp \
        "${rclone_args[@]}" --addr "127.0.0.1:$P_RCLONE_FTP" --passive-port "$1-$2" --public-ip 127.0.0.1 \
        || RCLONE_FTP_WHY="rclone serve ftp did not start"
    fi
    say "starting rclone serve sftp on $P_RCLONE_SFTP"
    START_WAIT=30 start_server rclone-sftp "$P_RCLONE_SFTP" "${rclone_env[@]}" "$RCLONE_BIN" serve sftp \
      "${rclone_args[@]}" --addr "127.0.0.1:$P_RCLONE_SFTP" --key "$LAB/keys/rclone_host_ed25519_key" \
      --authorized-keys "$LAB/keys/authorized_keys" \
      || RCLONE_SFTP_WHY="rclone serve sftp did not start"
  fi
fi

# ---------------------------------------------------------------- run bench.py
json_str() { "$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
s3_inst_json() {  # PORT SUPNAME WHY [APIPORT] - where an S3 instance serves, or why it does not
  if [ -n "$3" ]; then printf '{"why_na": %s}' "$(json_str "$3")"; return; fi
  printf '{"port": %s, "sup_pid": %s' "$1" "$(sup_pid "$2")"
  [ -n "${4:-}" ] && printf ', "api": {"port": %s, "token": "%s"}' "$4" "$API_TOKEN"
  printf '}'
}
S3_FTP_WHY=$S3_SIFTPD_WHY S3_SFTP_WHY=$S3_SIFTPD_WHY
[ -z "$S3_SIFTPD_WHY" ] && [ "$SIFTPD_FTP" != 1 ] && S3_FTP_WHY="no ftp module"
[ -z "$S3_SIFTPD_WHY" ] && [ "$SIFTPD_SFTP" != 1 ] && S3_SFTP_WHY="no sftp module"
S3_API=""; [ "${SIFTPD_API:-1}" = 1 ] && S3_API=$P_S3_HTTP
cat > "$LAB/lab.json" <<EOF
{
  "lab": "$LAB", "data": "$LAB/data", "client": "$LAB/client",
  "user": "$BENCH_USER", "password": "$PASS",
  "uid": $(id -u "$BENCH_USER"), "gid": $(id -g "$BENCH_USER"),
  "cacert": "$LAB/keys/cert.pem", "ssh_key": "$LAB/keys/id_ed25519",
  "iperf_port": $P_IPERF, "tmpfs_private": $LAB_MOUNTED,
  "password_hash": "sha512-crypt (openssl passwd -6) for the peers' user",
  "s3_backend_name": "$S3_BACKEND",
  "s3_backend": $([ "$S3_UP" = 1 ] && echo "{\"name\": \"$S3_BACKEND\", \"port\": $P_S3, \"bucket\": \"$S3_BUCKET\",
    \"sup_pid\": $(sup_pid "$S3_BACKEND"), \"version\": $(json_str "$S3_V"), \"region\": \"$S3_REGION\",
    \"access_key\": \"$S3_KEY\", \"secret_key\": \"$S3_SECRET\"}" || echo null),
  "s3_backend_why": $(json_str "$S3_WHY"),
  "servers": [
    {"name": "siftpd", "wanted": $(want siftpd && echo true || echo false),
     "version": $(json_str "$(head -1 <<<"$SIFTPD_V")"), "why_na": "$SIFTPD_WHY",
     "sup_pid": $(sup_pid siftpd), "nocache_sup_pid": $(sup_pid siftpd-nocache),
     "ftp": $([ "$SIFTPD_FTP" = 1 ] && echo "{\"port\": $P_SIFTPD_FTP, \"nocache_port\": $P_NOCACHE_FTP, \"tls\": $([ "$SIFTPD_TLS" = 1 ] && echo true || echo false)}" || echo null),
     "sftp": $([ "$SIFTPD_SFTP" = 1 ] && echo "{\"port\": $P_SIFTPD_SFTP, \"nocache_port\": $P_NOCACHE_SFTP}" || echo null),
     "api": $([ "$SIFTPD_FTP" = 1 ] && [ "$SIFTPD_SFTP" = 1 ] && [ "${SIFTPD_API:-1}" = 1 ] && echo "{\"port\": $P_SIFTPD_HTTP, \"token\": \"$API_TOKEN\"}" || echo null),
     "s3": {"prefix": "siftpd/", "ftp": $(s3_inst_json "$P_S3_FTP" siftpd-s3 "$S3_FTP_WHY" "$S3_API"),
            "sftp": $(s3_inst_json "$P_S3_SFTP" siftpd-s3 "$S3_SFTP_WHY" "$S3_API")}},
    {"name": "siftpd-pg", "wanted": $(want siftpd-pg && echo true || echo false),
     "version": $(json_str "$(head -1 <<<"$SIFTPD_V"); ${PG_V:-PostgreSQL ?}"), "why_na": $(json_str "$PG_WHY"),
     "sup_pid": $(sup_pid siftpd-pg), "nocache_sup_pid": $(sup_pid siftpd-pg-nocache),
     "ftp": $([ -z "$PG_WHY" ] && echo "{\"port\": $P_PG_FTP, \"nocache_port\": $P_PGNC_FTP, \"tls\": $([ "$SIFTPD_TLS" = 1 ] && echo true || echo false)}" || echo null),
     "sftp": $([ -z "$PG_WHY" ] && [ "$SIFTPD_SFTP" = 1 ] && echo "{\"port\": $P_PG_SFTP, \"nocache_port\": $P_PGNC_SFTP}" || echo null)},
    {"name": "siftpd-fleet", "wanted": $(want siftpd-fleet && echo true || echo false),
     "version": $(json_str "$(head -1 <<<"$SIFTPD_V"); 2 nodes; $("${HAPROXY_BIN:-haproxy}" -v 2>/dev/null | head -1)"),
     "why_na": $(json_str "$FLEET_WHY"), "sup_pid": $(sup_pid haproxy),
     "ftp": $([ -z "$FLEET_WHY" ] && echo "{\"port\": $P_FLEET, \"tls\": $([ "$SIFTPD_TLS" = 1 ] && echo true || echo false)}" || echo null), "sftp": null},
    {"name": "siftpd-fleet1", "wanted": $(want siftpd-fleet1 && echo true || echo false),
     "version": $(json_str "$(head -1 <<<"$SIFTPD_V"); node 1 of siftpd-fleet, through its HAProxy"),
     "why_na": $(json_str "$FLEET_WHY"), "sup_pid": $(sup_pid haproxy),
     "ftp": $([ -z "$FLEET_WHY" ] && echo "{\"port\": $P_FLEET1, \"tls\": $([ "$SIFTPD_TLS" = 1 ] && echo true || echo false)}" || echo null), "sftp": null},
    {"name": "vsftpd", "wanted": $(want vsftpd && echo true || echo false), "version": "$(pkg_version vsftpd)",
     "sup_pid": $(sup_pid vsftpd), "ftp": {"port": $P_VSFTPD, "tls": true}, "sftp": null},
    {"name": "proftpd", "wanted": $(want proftpd && echo true || echo false), "version": "$(pkg_version proftpd-core)",
     "sup_pid": $(sup_pid proftpd), "ftp": {"port": $P_PROFTPD, "tls": true}, "sftp": null},
    {"name": "pure-ftpd", "wanted": $(want pureftpd && echo true || echo false), "version": "$(pkg_version pure-ftpd)",
     "sup_pid": $(sup_pid pureftpd), "ftp": {"port": $P_PURE, "tls": true}, "sftp": null},
    {"name": "openssh", "wanted": $(want openssh && echo true || echo false), "version": "$(pkg_version openssh-server)",
     "sup_pid": $(sup_pid openssh), "ftp": null, "sftp": {"port": $P_SSHD}},
    {"name": "rclone", "wanted": $(want rclone && echo true || echo false), "version": $(json_str "$RCLONE_V"),
     "why_na": $(json_str "$RCLONE_WHY"), "sup_pid": 0, "ftp": null, "sftp": null,
     "s3": {"prefix": "rclone/", "ftp": $(s3_inst_json "$P_RCLONE_FTP" rclone-ftp "$RCLONE_FTP_WHY"),
            "sftp": $(s3_inst_json "$P_RCLONE_SFTP" rclone-sftp "$RCLONE_SFTP_WHY")}}
  ]
}
EOF
chmod 600 "$LAB/lab.json"
if [ "$HOLD" -gt 0 ] 2>/dev/null; then  # debugging: keep the lab up, bench nothing
  [ "$HOLD" -le 3600 ] || HOLD=3600
  say "lab up for $HOLD s: $LAB/lab.json (user $BENCH_USER, password $PASS); ^C stops it"
  sleep "$HOLD" & HOLD_PID=$!
  wait "$HOLD_PID" || true
  HOLD_PID=""
  exit 0
fi
mkdir -p "$HERE/results"
say "running bench.py ${BENCH_ARGS[*]:-}"
rc=0
# in the background + wait, so a TERM/INT to this script is handled at once
"$PY" "$HERE/bench.py" --lab "$LAB/lab.json" --out "$HERE/results" "${BENCH_ARGS[@]}" &
BENCH_PID=$!
wait "$BENCH_PID" || rc=$?
BENCH_PID=""
[ "$rc" = 0 ] || { echo "---- server logs (tails):" >&2; for f in "$LAB"/logs/*.log; do echo "-- $f" >&2; tail -5 "$f" >&2; done; }
exit "$rc"
