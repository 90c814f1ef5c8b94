#!/usr/bin/perl

# metrics.t -- the histograms of /metrics and /api/v1/stats: how long
# password checks took (argon2id or the verification cache) and how long
# transfers took by direction, summed over two workers; the exposition
# passes "promtool check metrics" (Debian's prometheus, unpacked by
# auto/deps --test).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use Test::Siftpd qw/http_get port/;

my $promtool = $ENV{TEST_SIFTPD_PROMTOOL} // '/var/cache/siftp-tests/promtool';

my $t = Test::Siftpd->new()->has('ftp', 'http');
my $d = $t->testdir();

mkdir "$d/data";
mkdir "$d/data/u";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
    }
}
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
    }
}
EOF

$t->user_add('u', 'pw', perms => 'list,download,upload,overwrite');
$t->run();
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

my $ftp = port(8021);
my $http = port(8080);

# the first login runs argon2id, the next ones are answered by the cache;
# a wrong password runs argon2id again

is($t->ftp_login($ftp, 'u', 'pw'), 'ok', 'first login');
is($t->ftp_login($ftp, 'u', 'pw'), 'ok', 'second login');
is($t->ftp_login($ftp, 'u', 'pw'), 'ok', 'third login');
is($t->ftp_login($ftp, 'u', 'nope'), '530', 'wrong password');

# one upload and two downloads

$t->write_file('xfer.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=15)
f.login('u', 'pw')
data = bytes(range(256)) * 4096
f.storbinary('STOR f.bin', io.BytesIO(data))
for i in range(2):
    got = io.BytesIO()
    f.retrbinary('RETR f.bin', got.write)
    print('ok download %d' % i if got.getvalue() == data
          else 'not ok download %d: %d bytes' % (i, len(got.getvalue())))
f.quit()
PY
$t->python_checks('xfer.py', $ftp);

my $m = http_get($http, '/metrics');
my ($text) = $m =~ /\r\n\r\n(.*)/s;

# the series of one histogram's label combination

sub series {
    my ($name, $labels) = @_;
    my (@le, @count);

    while ($text =~ /^siftp_${name}_bucket\{\Q$labels\E,le="([^"]+)"\} (\d+)$/mg) {
        push @le, $1;
        push @count, $2;
    }

    my ($sum) = $text =~ /^siftp_${name}_sum\{\Q$labels\E\} ([\d.]+)$/m;
    my ($n) = $text =~ /^siftp_${name}_count\{\Q$labels\E\} (\d+)$/m;

    return { le => \@le, bucket => \@count, sum => $sum, count => $n };
}

sub check_histogram {
    my ($name, $labels, $want) = @_;
    my $h = series($name, $labels);

    like($text, qr/^# TYPE siftp_$name histogram$/m, "$name: TYPE");
    is($h->{le}[-1], '+Inf', "$name $labels: +Inf bucket last");
    is($h->{count}, $h->{bucket}[-1], "$name $labels: count is +Inf");
    is($h->{count}, $want, "$name $labels: $want observed");
    ok(!grep({ $h->{bucket}[$_] < $h->{bucket}[$_ - 1] } 1 .. $#{$h->{bucket}}),
        "$name $labels: buckets cumulative");
    ok(defined $h->{sum}, "$name $labels: sum");

    return $h;
}

my $argon = check_histogram('login_check_seconds', 'check="argon2id"', 2);
my $cache = check_histogram('login_check_seconds', 'check="cache"', 3);
ok($argon->{sum} > 0, 'argon2id checks took time');
ok($argon->{sum} / 2 > $cache->{sum} / 3,
    'a cache answer takes less than argon2id');

check_histogram('transfer_duration_seconds', 'direction="upload"', 1);
check_histogram('transfer_duration_seconds', 'direction="download"', 2);

# the same numbers in the JSON statistics

my $r = http_get($http, '/api/v1/stats');
my ($body) = $r =~ /\r\n\r\n(.*)/s;
my $s = eval { decode_json($body) } // {};

is($s->{logins}{check_seconds}{argon2id}{count}, 2, 'json: argon2id count');
is($s->{logins}{check_seconds}{cache}{count}, 3, 'json: cache count');
is($s->{logins}{check_seconds}{cache}{buckets}{'+Inf'}, 3,
    'json: +Inf bucket');
ok($s->{logins}{check_seconds}{argon2id}{sum_us} > 0, 'json: sum_us');
is($s->{transfer_seconds}{upload}{count}, 1, 'json: uploads');
is($s->{transfer_seconds}{download}{count}, 2, 'json: downloads');
is($s->{transfer_seconds}{download}{buckets}{'3600'},
    $s->{transfer_seconds}{download}{count}, 'json: last bound holds all');

# Prometheus' own checker reads the whole exposition

SKIP: {
    skip "no promtool at $promtool (auto/deps --test unpacks it)", 1
        unless -x $promtool;

    $t->write_file('metrics.txt', $text);
    my $out = `$promtool check metrics < $d/metrics.txt 2>&1`;
    is($?, 0, 'promtool check metrics') or diag($out);
}

$t->stop();

done_testing();
