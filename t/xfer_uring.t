#!/usr/bin/perl

# xfer_uring.t -- the pooled copy's file I/O through the worker's
# io_uring: with "io_uring on", "sendfile off" and "splice off", FTP and
# FTPS downloads (of a file not in the page cache) and uploads of a few
# MiB, and a resumed download and upload, arrive byte for byte; the
# plaintext ones are counted with path="io_uring" (a resumed download
# whose chunks all came from the page cache with path="pooled": what the
# ring counted for it decides), the FTPS ones keep their TLS path, and
# siftp_io_uring_ops_total counts the ring's reads and writes of both.
# ABOR and a dropped data connection in the middle of an upload leave no
# file behind and the worker serving. With io_uring off the same
# transfers take the pooled copy and the ring counts nothing. The default
# seccomp filter is on throughout.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Socket qw/SOL_SOCKET SO_LINGER/;
use Test::Siftpd qw/port http_get/;
use Test::Siftpd::FTP qw/ftp_cmd ftp_login ftp_upload_start/;
use Test::Ftps qw/add_user same/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no io_uring built in')
    unless `@{[ $t->binary() ]} -V 2>&1` =~ /--with-io_uring\b/;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;
plan(skip_all => 'the test directory is in memory: no ring I/O there')
    if `stat -f -c %T $d` =~ /tmpfs|ramfs/;

mkdir "$d/data";
mkdir "$d/data/alice";

sub conf {
    my ($uring) = @_;

    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; io_uring $uring; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    sendfile off;
    splice off;
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        data_timeout 20s;
    }
    server {
        listen 127.0.0.1:%%PORT_8061%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        data_timeout         20s;
    }
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF
}

conf('on');

# 3 MiB + 5 bytes: a dozen chunks and a short last one
system("head -c 3145733 /dev/urandom > $d/big") == 0 or die;
system("cp $d/big $d/data/alice/big") == 0 or die;

add_user($t, 'alice', 'pw-a', '--home', '/alice',
    '--perms', 'list,download,upload,overwrite,delete');

$t->run();

ok($t->wait_log(qr/io_uring: a ring of 256 entries/),
    'the worker has its ring')
    or BAIL_OUT('no ring: ' . $t->read_file('error.log'));

my $plain = "curl -sS --max-time 60 -u alice:pw-a ftp://127.0.0.1:"
    . port(8021);
my $tls = "curl -sS -k --max-time 60 -u alice:pw-a --ssl-reqd "
    . "ftp://127.0.0.1:" . port(8061);

sub metric {
    my ($name, $labels) = @_;
    my $m = http_get(port(8080), '/metrics') // '';
    return $m =~ /^siftp_\Q$name\E\{\Q$labels\E\} (\d+)$/m ? $1 : 0;
}

sub path { metric('transfers_total', "direction=\"$_[0]\",path=\"$_[1]\"") }
sub ring { metric('io_uring_ops_total', "op=\"$_[0]\"") }

# the counters of paths and ring operations, for a diagnosis
sub metrics_of_paths {
    return grep { /^siftp_(transfers|io_uring_ops)_total/ }
        split /^/, http_get(port(8080), '/metrics') // '';
}

# the file leaves the page cache, so RWF_NOWAIT cannot read it on the loop
sub uncache {
    my ($f) = @_;
    system("sync $f && dd if=$f iflag=nocache count=0 status=none") == 0
        or diag("dropping $f from the page cache failed");
}

sub run_ok {
    my ($cmd, $name) = @_;
    my $out = `$cmd 2>&1`;
    is($?, 0, $name) or diag($out);
}

# plaintext download and upload

uncache("$d/data/alice/big");
unlink "$d/got";
run_ok("$plain/big -o $d/got", 'plain download');
ok(same("$d/got", "$d/big"), 'plain download: byte for byte');
ok($t->wait_for(sub { path('download', 'io_uring') == 1 }),
    'plain download: path="io_uring"');
cmp_ok(ring('read'), '>', 0, 'its chunks read by the ring');

run_ok("$plain/up -T $d/big", 'plain upload');
ok(same("$d/data/alice/up", "$d/big"), 'plain upload: byte for byte');
ok($t->wait_for(sub { path('upload', 'io_uring') == 1 }),
    'plain upload: path="io_uring"');
my $w = ring('write');
cmp_ok($w, '>=', 12, 'its chunks written by the ring');

# FTPS: the path names who seals the records, the ring counts the file I/O

uncache("$d/data/alice/big");
unlink "$d/got";
my $r = ring('read');
run_ok("$tls/big -o $d/got", 'FTPS download');
ok(same("$d/got", "$d/big"), 'FTPS download: byte for byte');
ok($t->wait_for(sub { ring('read') > $r }), 'FTPS download: read by the ring');
is(path('download', 'io_uring'), 1, 'and not counted as io_uring');

run_ok("$tls/tup -T $d/big", 'FTPS upload');
ok(same("$d/data/alice/tup", "$d/big"), 'FTPS upload: byte for byte');
ok($t->wait_for(sub { ring('write') >= $w + 12 }),
    'FTPS upload: written by the ring');
is(path('upload', 'tls'), 1, 'counted with path="tls"');

# resumed: REST then RETR from 1 MiB + 3, and an upload continued by APPE

uncache("$d/data/alice/big");
unlink "$d/got";
$r = ring('read');
run_ok("$plain/big -C 1048579 -o $d/got", 'resumed download');
system("tail -c +1048580 $d/big > $d/tail") == 0 or die;
ok(same("$d/got", "$d/tail"), 'resumed download: the rest, byte for byte');

system("head -c 1000003 $d/big > $d/data/alice/half") == 0 or die;
run_ok("$plain/half -C - -T $d/big", 'resumed upload');
ok(same("$d/data/alice/half", "$d/big"), 'resumed upload: byte for byte');
ok($t->wait_for(sub { path('upload', 'io_uring') == 2 }),
    'resumed upload: counted with path="io_uring"')
    or diag(metrics_of_paths());

# a read that finds its chunk cached is not the ring's: where the disk
# answered the read-ahead of the first miss before the read looked (a race
# of microseconds, never certain), the whole tail came from the page cache

my $ringed = ring('read') > $r;
diag('the resumed download came from the page cache') unless $ringed;
is(path('download', $ringed ? 'io_uring' : 'pooled'), $ringed ? 2 : 1,
    'resumed download: counted with the path that read it')
    or diag(metrics_of_paths());

# ABOR in the middle of a ring-backed upload: no file, and no temporary

sub leftovers {
    opendir my $dh, "$d/data/alice" or return 'none';
    return join ' ', sort grep { !/^(\.|\.\.|big|up|tup|half)$/ } readdir $dh;
}

my $chunk = 'x' x (1024 * 1024);
my ($s, $dc) = ftp_upload_start(port(8021), 'alice', 'pw-a', 'aborted',
    $chunk x 4);
my $ab = ftp_cmd($s, 'ABOR');
$ab .= <$s> // '' if $ab =~ /^426 /;
like($ab, qr/^426 .*^226 /ms, 'ABOR during the upload: 426, then 226');
close $dc;
close $s;
ok($t->wait_for(sub { leftovers() eq '' }), 'ABOR: nothing left')
    or diag(leftovers());

# a data connection reset in the middle of an upload

($s, $dc) = ftp_upload_start(port(8021), 'alice', 'pw-a', 'dropped',
    $chunk x 4);
setsockopt($dc, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
close $dc;
like(<$s> // '', qr/^4\d\d /, 'a reset data connection: a 4xx reply');
close $s;
ok($t->wait_for(sub { leftovers() eq '' }), 'a reset: nothing left')
    or diag(leftovers());

$s = ftp_login(port(8021), 'alice', 'pw-a');
ftp_cmd($s, 'TYPE I');
like(ftp_cmd($s, 'SIZE big'), qr/^213 3145733/, 'the worker serves on');
close $s;

$t->stop();

my $log = $t->read_file('error.log');
unlike($log, qr/exited on signal|\[(alert|crit|emerg)\]/,
    'no worker died (seccomp allows the ring), no alert');

# io_uring off: the same transfers take the pooled copy

conf('off');
unlink "$d/data/alice/up";
$t->run();

uncache("$d/data/alice/big");
unlink "$d/got";
run_ok("$plain/big -o $d/got", 'io_uring off: plain download');
ok(same("$d/got", "$d/big"), 'io_uring off: byte for byte');
run_ok("$plain/up -T $d/big", 'io_uring off: plain upload');
ok(same("$d/data/alice/up", "$d/big"), 'io_uring off: upload byte for byte');
run_ok("$tls/big -o $d/got", 'io_uring off: FTPS download');
ok(same("$d/got", "$d/big"), 'io_uring off: FTPS byte for byte');
ok($t->wait_for(sub { path('download', 'pooled') == 1
        && path('upload', 'pooled') == 1 }),
    'io_uring off: counted with path="pooled"');
is(path('download', 'io_uring') + path('upload', 'io_uring')
    + ring('read') + ring('write'), 0, 'and nothing by the ring');

$t->stop();

done_testing();
