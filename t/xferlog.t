#!/usr/bin/perl

# xferlog.t -- the transfer log in xferlog format (one line per finished or
# failed transfer, 18 fields that existing tools split on blanks) and the
# counters behind /api/v1/stats and /metrics: sessions, logins and
# transfers by direction and data path (sendfile and splice where they
# serve, sendfile in slices and the pooled upload for a user with a rate,
# the pooled copy for TYPE A and where "sendfile off; splice off;" turn
# them off); the log is reopened on USR1.  The session log records
# what a session changed, with the paths as the user sees them.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";
$t->write_file('data/alice/down file', "line\n" x 20000);

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
users %%TESTDIR%%/users;
transfer_log %%TESTDIR%%/xferlog;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server { listen 127.0.0.1:%%PORT_8021%%; storage local; }
    server {
        listen 127.0.0.1:%%PORT_8023%%;
        storage local;
        sendfile off;
        splice off;
    }
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
EOF

$t->user_add('alice', 'pw',
    perms => 'list,download,upload,overwrite,delete,rename,mkdir,rmdir,chmod');
$t->user_key('alice');
$t->user_add('rated', 'pw', perms => 'list,download,upload');
mkdir "$d/data/rated";
$t->write_file('data/rated/r', 'r' x 300000);
my $users = $t->read_file('users');
$users =~ s/^\[rated\]\n/[rated]\ndownload_rate = 4m\nupload_rate = 4m\n/m
    or die 'no user rated';
$t->write_file('users', $users);

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

sub stats {
    my ($body) = (http_get(port(8080), '/api/v1/stats') // '')
        =~ /\r\n\r\n(.*)/s;
    return eval { decode_json($body // '') } || {};
}

my $port = port(8021);
my $out = `python3 - <<'PY' 2>&1
import ftplib, io
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=15)
try:
    f.login('alice', 'wrong')
except ftplib.error_perm:
    pass
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=15)
f.login('alice', 'pw')
b = io.BytesIO()
f.retrbinary('RETR down file', b.write)
print('binary', len(b.getvalue()))
lines = []
f.retrlines('RETR down file', lines.append)
print('ascii', len(lines))
f.storbinary('STOR up', io.BytesIO(b'u' * 12345))
f.storlines('STOR text', io.BytesIO(b'x\\n' * 1000))
print('stored')
g = ftplib.FTP()
g.connect('127.0.0.1', $port, timeout=15)
g.login('alice', 'pw')
import urllib.request
print('STATS', urllib.request.urlopen('http://127.0.0.1:%d/api/v1/stats'
    % ${\ port(8080)}).read().decode())
g.quit()
f.quit()
PY`;

like($out, qr/^binary 100000$/m, 'binary download');
like($out, qr/^ascii 20000$/m, 'ascii download');
like($out, qr/^stored$/m, 'upload');

my ($during) = $out =~ /^STATS (.*)$/m;
my $s = eval { decode_json($during // '') } || {};
is($s->{sessions}{ftp}, 2, 'two FTP sessions open, summed over workers');

ok($t->wait_for(sub { (stats()->{sessions}{ftp} // -1) == 0 }, 10),
    'none after they quit');

$s = stats();
is($s->{logins}{ok}, 2, 'two logins');
is($s->{logins}{failed}, 1, 'one failed login');
my $x = $s->{transfers};
is($x->{download}{sendfile}{count}, 1, 'a binary download by sendfile');
is($x->{download}{sendfile}{bytes}, 100000, 'its bytes');
is($x->{download}{pooled}{count}, 1, 'an ascii download by the pooled copy');
is($x->{download}{pooled}{bytes}, 120000, 'its bytes, CRLF included');
is($x->{upload}{splice}{count}, 1, 'a binary upload by splice');
is($x->{upload}{splice}{bytes}, 12345, 'its bytes');
is($t->read_file('data/alice/up'), 'u' x 12345, 'stored whole');
is($x->{upload}{pooled}{count}, 1, 'an ascii upload by the pooled copy');
is($x->{upload}{pooled}{bytes}, 3000, 'its bytes, CRLF included');
is($t->read_file('data/alice/text'), "x\n" x 1000, 'stored with LF');

my ($metrics) = (http_get(port(8080), '/metrics') // '') =~ /\r\n\r\n(.*)/s;
like($metrics,
    qr/^siftp_transfers_total\{direction="download",path="sendfile"\} 1$/m,
    'metrics: labelled transfer counters');
like($metrics,
    qr/^siftp_transfer_bytes_total\{direction="upload",path="splice"\} 12345$/m,
    'metrics: labelled transfer bytes');
like($metrics, qr/^siftp_logins_total 2$/m, 'metrics: logins');
like($metrics, qr/^siftp_ftp_sessions 0$/m, 'metrics: sessions gauge');

# the transfer log

my @lines = split /\n/, $t->read_file('xferlog');
is(scalar @lines, 4, 'one line per transfer');

my @f = split " ", $lines[0];   # as awk does: runs of blanks (ctime pads the day)
is(scalar @f, 18, '18 blank-separated fields');
like($lines[0], qr/^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \d+ 127\.0\.0\.1 100000 \/down_file b _ o r alice ftp 0 \* c$/,
    'binary download: xferlog fields, the blank in the name as _');
like($lines[1], qr/ 120000 \/down_file a _ o r alice ftp 0 \* c$/,
    'ascii download');
like($lines[2], qr/ 12345 \/up b _ i r alice ftp 0 \* c$/, 'upload');
like($lines[3], qr/ 3000 \/text a _ i r alice ftp 0 \* c$/, 'ascii upload');

# sendfile off; splice off: the pooled copy both ways, same bytes

my $off = port(8023);
system("curl -s -o $d/got ftp://alice:pw\@127.0.0.1:$off/down%20file"
    . " && curl -s -T $d/got ftp://alice:pw\@127.0.0.1:$off/up2");
is($t->read_file('data/alice/up2'), "line\n" x 20000,
    'sendfile off, splice off: download and upload intact');
$x = stats()->{transfers};
is($x->{download}{pooled}{count}, 2, 'the download took the pooled copy');
is($x->{upload}{pooled}{count}, 2, 'so did the upload');
is($x->{download}{sendfile}{count} + $x->{upload}{splice}{count}, 2,
    'neither used sendfile or splice');

# a user with rates: sendfile in slices down, the pooled copy up (splice
# cannot be held to a rate)

system("curl -s -o $d/rgot ftp://rated:pw\@127.0.0.1:$port/r"
    . " && curl -s -T $d/rgot ftp://rated:pw\@127.0.0.1:$port/rup");
is($t->read_file('data/rated/rup'), 'r' x 300000,
    'a rated user: download and upload intact');
$x = stats()->{transfers};
is("$x->{download}{sendfile}{count} $x->{download}{sendfile}{bytes}",
    '2 400000', 'the rated download took sendfile');
is("$x->{upload}{splice}{count} $x->{upload}{pooled}{count}",
    '1 3', 'the rated upload took the pooled copy, not splice');

# SFTP transfers: the same log, service sftp, and their own data path

SKIP: {
    skip 'no sftp', 5 unless -x '/usr/bin/sftp';

    $t->write_file('sbatch', "get \"down file\" $d/sgot\nput $d/sgot \"s up\"\n");
    my $sp = port(8022);
    my $o = `timeout 30 sftp -b $d/sbatch -P $sp -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i $d/key alice\@127.0.0.1 2>&1`;
    is($? >> 8, 0, 'sftp get and put') or diag($o);

    my @sl = grep { / sftp 0 \* / } split /\n/, $t->read_file('xferlog');
    is(scalar @sl, 2, 'two sftp lines in the transfer log');
    like($sl[0] // '', qr/ 100000 \/down_file b _ o r alice sftp 0 \* c$/,
        'the sftp download');
    like($sl[1] // '', qr/ 100000 \/s_up b _ i r alice sftp 0 \* c$/,
        'the sftp upload');
    my $sx = stats()->{transfers};
    is("$sx->{download}{sftp}{count} $sx->{upload}{sftp}{bytes}",
        '1 100000', 'counted under the sftp path');
}

# the session log: what changed, as the user sees it

system("python3 - <<'PY'
import ftplib
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=15)
f.login('alice', 'pw')
f.mkd('d 1')
f.rename('up', 'd 1/moved')
f.sendcmd('SITE CHMOD 600 d 1/moved')
f.delete('d 1/moved')
f.rmd('d 1')
f.quit()
PY");
my $log = $t->read_file('error.log');
like($log, qr/mkdir "\/d 1", client: 127\.0\.0\.1.*user: "alice"/, 'mkdir logged');
like($log, qr/rename "\/up" to "\/d 1\/moved"/, 'rename logged');
like($log, qr/chmod 0600 "\/d 1\/moved"/, 'chmod logged');
like($log, qr/delete "\/d 1\/moved"/, 'delete logged');
like($log, qr/rmdir "\/d 1"/, 'rmdir logged');
$t->write_file('data/alice/up', 'u' x 12345);

# reopened on USR1

rename "$d/xferlog", "$d/xferlog.1";
kill 'USR1', $t->pid();
$t->wait_log(qr/reopened/, 5);
select(undef, undef, undef, 0.5);
system("curl -s -o /dev/null ftp://alice:pw\@127.0.0.1:$port/up");
ok($t->wait_for(sub { -s "$d/xferlog" }, 5), 'a new file after USR1');
like($t->read_file('xferlog'), qr/ 12345 \/up b _ o r alice ftp 0 \* c$/m,
    'with the next transfer');

$t->done();
