#!/usr/bin/perl

# s3_storage.t -- the s3 storage driver against moto: t/s3_storage.py runs
# moto's server on a free 127.0.0.1 port with a bucket filled through
# moto's API (files of 0 bytes, 5000 bytes and 20 MiB, directories by
# prefix and by marker, a key with an empty segment, 20,000 keys in one
# directory) and a stand-in that refuses every key.  siftpd serves the
# bucket over FTP and SFTP: listings (LIST, MLSD, NLST, SFTP ls) of the
# root, a prefix and a marker; downloads byte-identical (curl, ftplib,
# REST, OpenSSH sftp, paramiko reads at offsets); a sequential 20 MiB
# download in few GETs; MKD/RMD, DELE, SIZE, MDTM; 20,000 names listed
# once each in bounded memory; siftpd -t refusing bad values with
# file:line and a credentials file others may read; the start line of a
# missing bucket and of refused keys; a small upload by each protocol; the
# S3 requests counted by operation and result in /metrics.  Every process
# is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Test::Siftpd::S3 qw/s3_storage_moto s3_ftp_sftp/;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
my $refuse = port(8901);
s3_storage_moto($t, $s3, $refuse, $d);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage cloud {
    driver s3;
    s3_endpoint http://127.0.0.1:$s3;
    s3_bucket files;
    s3_prefix /srv//;
    s3_credentials file %%TESTDIR%%/creds;
    s3_retries 1;
    s3_timeout 30s;
}
storage gone {
    driver s3;
    s3_endpoint http://127.0.0.1:$s3;
    s3_bucket nosuch;
    s3_credentials file %%TESTDIR%%/creds;
}
storage refused {
    driver s3;
    s3_endpoint http://127.0.0.1:$refuse;
    s3_bucket files;
    s3_credentials file %%TESTDIR%%/creds;
    s3_retries 0;
}
@{[ s3_ftp_sftp('cloud') ]}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

# siftpd -t: each bad value refused with file:line

my $conf = $t->read_file('siftpd.conf');

for my $case (['s3_part_size 1m;', qr/"1m" is not from/],
    ['s3_addressing sideways;', qr/invalid value "sideways"/],
    ['s3_parts_in_flight 0;', qr/"0" is not from/],
    ['s3_stat_peek 1m;', qr/"1m" is not from 0 to 262144/],
    ['s3_sse aes;', qr/invalid value "aes"/],
    ['s3_storage_class FAST;', qr/unknown storage class "FAST"/],
    ['s3_credentials ldap;', qr/invalid value "ldap"/])
{
    my ($directive, $re) = @$case;
    (my $bad = $conf) =~ s/(s3_bucket files;)/$1 $directive/;
    $t->write_file('bad.conf', $bad);
    my $line = 1 + (() = substr($bad, 0, index($bad, $directive))
        =~ /\n/g);
    my (undef, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
    like($msg, qr/\Q$d\E\/bad\.conf:$line: .*$re/,
        "siftpd -t refuses \"$directive\" with file:line");
}

{
    (my $bad = $conf) =~ s{s3_endpoint http://127.0.0.1:$s3;}{s3_endpoint ftp://x;};
    $t->write_file('bad.conf', $bad);
    my $line = 1 + (() = substr($bad, 0, index($bad, 'storage cloud'))
        =~ /\n/g);
    my ($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
    like($msg, qr/S3 endpoint "ftp:\/\/x" is not http:\/\/ or https:\/\/.*in storage "cloud" in \Q$d\E\/bad\.conf:$line\b/s,
        'siftpd -t refuses an endpoint that is not http(s) with file:line');

    ($bad = $conf) =~ s{s3_endpoint http://127.0.0.1:$s3;}
        {s3_endpoint https://127.0.0.1:$s3; s3_tls_verify off;};
    $t->write_file('bad.conf', $bad);
    ($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
    like($msg, qr/\[warn\] the TLS certificate of S3 endpoint "https:\S+" is not verified/,
        's3_tls_verify off: a warning');
    is($rc, 0, 's3_tls_verify off: accepted');
}

chmod 0644, "$d/creds";
my (undef, $msg) = $t->siftpd('-t', '-c', "$d/siftpd.conf");
like($msg, qr/siftpd\.conf:\d+: credentials file "\Q$d\E\/creds" refused/,
    'siftpd -t refuses a credentials file others may read');
chmod 0600, "$d/creds";

unlike($t->read_file('siftpd.conf') . `$t->{_binary} -p $d/ -c $d/siftpd.conf -T 2>&1`,
    qr/testsecret/, 'siftpd -T shows no secret');

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('eve', 'pw', perms => 'all', storage => 'refused');
$t->user_add('mal', 'pw', perms => 'all', storage => 'refused',
    home => '/broken');
my $key = $t->user_key('bob');

$t->run();

# the start: one line for the missing bucket, one for the refused keys

ok($t->wait_log(qr/S3 storage "gone": bucket "nosuch" at \S+ answered status 404, NoSuchBucket/),
    'a missing bucket: one line at the start');
ok($t->wait_log(qr/S3 storage "refused": bucket "files" at \S+ answered status 403, InvalidAccessKeyId/),
    'refused keys: one line at the start');
unlike($t->read_file('error.log'),
    qr/S3 storage "cloud": (?!\d+ multipart uploads older than)/,
    'a bucket that works: no line but the sweep\'s');

my @w = $t->workers();
is(scalar @w, 1, 'one worker');

sub hwm {
    open(my $fh, '<', "/proc/$w[0]/status") or return 0;
    my ($kb) = join('', <$fh>) =~ /^VmHWM:\s+(\d+)/m;
    return $kb // 0;
}

sub gets {
    my ($key) = @_;
    return scalar grep { /"GET \/files\/srv\/bob\/\Q$key\E / }
        split /\n/, $t->read_file('s3.log');
}

# FTP

my $ftp = port(8021);
my $sftp = port(8022);

for my $name ('zero', 'small', 'big') {
    my $got = `curl -s --max-time 60 ftp://bob:pw\@127.0.0.1:$ftp/$name`;
    my $want = $name eq 'big' ? $t->read_file('big') : undef;
    if ($name eq 'zero') {
        is(length($got), 0, 'curl RETR of 0 bytes');
    } elsif ($name eq 'small') {
        is(length($got), 5000, 'curl RETR of 5000 bytes');
    } else {
        ok($got eq $want, 'curl RETR of 20 MiB: byte-identical');
    }
}

my $before = gets('big');
my $got = `curl -s --max-time 60 ftp://bob:pw\@127.0.0.1:$ftp/big`;
ok($got eq $t->read_file('big'), 'a second RETR of 20 MiB: byte-identical');
my $n = gets('big') - $before;
ok($n >= 1 && $n <= 2, "a sequential 20 MiB download took $n GET(s)");

$t->write_file('ftp.py', <<'PY');
import ftplib, io, sys
port, testdir = int(sys.argv[1]), sys.argv[2]
big = open(testdir + '/big', 'rb').read()
small = None

def check(cond, what):
    print(('ok ' if cond else 'not ok ') + what, flush=True)

f = ftplib.FTP()
f.connect('127.0.0.1', port, timeout=60)
f.login('bob', 'pw')

check(sorted(f.nlst()) == ['big', 'emptydir', 'full', 'gone', 'many',
                           'odd', 'small', 'sub', 'zero'],
      'NLST of the root: files, prefixes, markers')
lines = []
f.retrlines('LIST', lines.append)
check(len(lines) == 9 and any(l.startswith('d') and l.endswith(' sub')
                              for l in lines)
      and any(l.startswith('-') and ' 5000 ' in l and l.endswith(' small')
              for l in lines), 'LIST of the root')
m = dict(f.mlsd('sub'))
check(m.get('a.txt', {}).get('type') == 'file'
      and m['a.txt'].get('size') == '6'
      and m.get('deeper', {}).get('type') == 'dir', 'MLSD of a prefix')
check(f.nlst('emptydir') == [], 'NLST of a directory marker: empty')
check(f.nlst('odd') == ['odd/y'] or f.nlst('odd') == ['y'],
      'a key with an empty segment is left out')

f.voidcmd('TYPE I')
check(f.size('small') == 5000, 'SIZE')
check(f.sendcmd('MDTM small') == '213 20010909014640',
      'MDTM from x-amz-meta-mtime')
check(f.sendcmd('MDTM big')[4:] == dict(f.mlsd())['big']['modify'],
      'MDTM from Last-Modified: the time the listing gives')

for off in (0, 1, 4999999, len(big) - 10):
    buf = io.BytesIO()
    f.retrbinary('RETR big', buf.write, rest=off)
    check(buf.getvalue() == big[off:], 'REST %d RETR: byte-identical' % off)

def reply(cmd):
    try:
        return f.sendcmd(cmd)
    except ftplib.all_errors as e:
        return str(e)

check(reply('MKD made').startswith('257'), 'MKD')
check(reply('MKD made').startswith('550'), 'MKD of an existing name: 550')
check(reply('MKD small').startswith('550'), 'MKD of a file name: 550')
check(reply('RMD full').startswith('550 Directory not empty'),
      'RMD of a non-empty directory: 550 with the reason')
check(reply('RMD made').startswith('250'), 'RMD')
check(reply('RMD gone').startswith('250'), 'RMD of a marker')
check('gone' not in f.nlst() and 'made' not in f.nlst(),
      'removed directories are gone')
check(reply('DELE zero').startswith('250'), 'DELE')
check(reply('DELE zero').startswith('550'), 'DELE of a missing file: 550')
check(reply('SIZE nosuch').startswith('550'), 'SIZE of a missing file: 550')

f.storbinary('STOR up', io.BytesIO(b'abc'))
check(f.size('up') == 3, 'STOR of 3 bytes (t/s3_storage_upload.t: more)')
f.delete('up')

names = f.nlst('many')
names = [n.split('/')[-1] for n in names]
check(len(names) == 20000 and len(set(names)) == 20000
      and sorted(names) == ['f%05d' % i for i in range(20000)],
      'a directory of 20,000 keys listed, each name once')
f.quit()
PY

my $hwm = hwm();
my ($c, $pyout) = $t->python_checks('ftp.py', $ftp, $d);
ok($c == 24, 'the FTP checks ran') or diag($pyout);
my $grew = hwm() - $hwm;
SKIP: {
    skip("AddressSanitizer's quarantine keeps what is freed", 1)
        if `$t->{_binary} -V 2>&1` =~ /--with-sanitizers/;
    ok($grew < 64 * 1024,
        "the worker's peak memory grew by $grew KiB (< 64 MiB)");
}

# errors: 403 refused, a 500 an I/O error logged with the S3 operation,
# the key, the status and S3's code

my $out = $t->ftp_commands($ftp, 'eve', 'SIZE x', 'MKD d');
like($out, qr/^SIZE x 550$/m, 'a 403 answer: 550');
$out = $t->ftp_commands($ftp, 'mal', 'SIZE x', 'MDTM x');
like($out, qr/^SIZE x [45]\d\d$/m, 'a 500 answer: an error reply');
ok($t->wait_log(qr/\[error\].*S3 storage "refused": GetObject of "broken\/x" failed: status 500/),
    'a 500 answer: one line with the operation, key and status');

# SFTP

$t->write_file('sftp.py', <<'PY');
import paramiko, sys
port, key, testdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
big = open(testdir + '/big', 'rb').read()

def check(cond, what):
    print(('ok ' if cond else 'not ok ') + what, flush=True)

t = paramiko.Transport(('127.0.0.1', port))
t.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
s = paramiko.SFTPClient.from_transport(t)

check(sorted(s.listdir('.')) == ['big', 'emptydir', 'full', 'many', 'odd',
                                 'small', 'sub'], 'SFTP ls of the root')
check(sorted(s.listdir('sub')) == ['a.txt', 'deeper'], 'SFTP ls of a prefix')
check(s.listdir('emptydir') == [], 'SFTP ls of a marker: empty')
check(s.stat('sub').st_mode & 0o170000 == 0o040000, 'SFTP stat of a prefix')
check(s.stat('small').st_size == 5000, 'SFTP stat of a file')

with s.open('big', 'rb') as f:
    ok = True
    for off, n in ((0, 1000), (12345, 70000), (len(big) - 100, 100),
                   (5 << 20, 300000), (17, 1)):
        f.seek(off)
        if f.read(n) != big[off:off + n]:
            ok = False
    check(ok, 'SFTP reads at offsets: byte-identical')

with s.open('big', 'rb') as f:
    f.prefetch()
    check(f.read() == big, 'SFTP pipelined read of 20 MiB: byte-identical')

try:
    s.rmdir('full')
    check(False, 'SFTP rmdir of a non-empty directory refused')
except IOError as e:
    check('not empty' in str(e).lower() or 'failure' in str(e).lower(),
          'SFTP rmdir of a non-empty directory refused: ' + str(e))

s.mkdir('sdir')
check('sdir' in s.listdir('.'), 'SFTP mkdir')
s.rmdir('sdir')
check('sdir' not in s.listdir('.'), 'SFTP rmdir')
s.remove('sub/a.txt')
check(s.listdir('sub') == ['deeper'], 'SFTP rm')

with s.open('up', 'wb') as f:
    f.write(b'abc')
check(s.stat('up').st_size == 3, 'SFTP upload of 3 bytes')
s.remove('up')

s.close()
t.close()
PY

($c, $pyout) = $t->python_checks('sftp.py', $sftp, $key, $d);
ok($c == 12, 'the SFTP checks ran') or diag($pyout);

my $rc;
($rc, $out) = $t->sftp_batch($sftp, 'bob',
    "get big $d/sftp-big\nget small $d/sftp-small\nls -1 sub\n");
is($rc, 0, 'OpenSSH sftp: the batch ran');
ok($t->read_file('sftp-big') eq $t->read_file('big'),
    'OpenSSH sftp get of 20 MiB: byte-identical');
is(-s "$d/sftp-small", 5000, 'OpenSSH sftp get of 5000 bytes');
like($out, qr/deeper/, 'OpenSSH sftp ls of a prefix');

# the S3 requests of all this, by operation and result, in /metrics

my $m = http_get(port(8080), '/metrics') // '';
my %s3;
$s3{"$1 $2"} = $3
    while $m =~ /^siftp_s3_requests_total\{operation="(\w+)",result="(\w+)"\} (\d+)$/mg;
ok(($s3{'ListObjectsV2 ok'} // 0) > 0, 'metrics: listings counted')
    or diag($m);
ok(($s3{'GetObject ok'} // 0) > 0 && ($s3{'HeadObject ok'} // 0) > 0,
    'metrics: downloads counted, their HEAD and GETs');
ok(($s3{'HeadObject client_error'} // 0) > 0,
    'metrics: a HEAD of a missing key is a client error');
ok(($s3{'PutObject ok'} // 0) > 0 && ($s3{'DeleteObject ok'} // 0) > 0,
    'metrics: directory markers made and keys deleted');

$t->done();
