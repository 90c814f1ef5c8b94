#!/usr/bin/perl

# ftp_more.t -- more FTP commands: HASH and OPTS HASH (against Python's
# hashlib and zlib), SITE CHMOD and SITE HELP, MFMT, STOU, LIST and NLST
# of one file, STAT of a path, REIN.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_cmd/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/ro";
mkdir "$d/data/nd";
mkdir "$d/data/rl";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
    }
}
EOF

for (['alice', 'pw-a', '/alice',
      'list,download,upload,overwrite,delete,rename,mkdir,rmdir,chmod'],
     ['ro', 'pw-r', '/ro', 'list,download'],
     ['nd', 'pw-n', '/nd', 'list,upload'],
     ['rl', 'pw-l', '/rl', 'list,download,upload,overwrite'])
{
    my ($u, $pw, $home, $perms) = @$_;
    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $u, '--home', $home, '--perms', $perms or die;
    print $fh "$pw\n";
    close $fh;
}

system("head -c 3145728 /dev/urandom > $d/data/alice/rand.bin") == 0
    or die;
system("head -c 1048576 /dev/urandom > $d/data/rl/one.bin") == 0 or die;

# limits of "rl": 512 KiB/s both ways, two sessions
my $users = $t->read_file('users');
$users =~ s/^\[rl\]\n/[rl]\ndownload_rate = 512k\nupload_rate = 512k\nmax_sessions = 2\n/m
    or die "no [rl] in users";
$t->write_file('users', $users);
$t->write_file('data/ro/r.txt', "read only\n");
$t->write_file('data/nd/n.txt', "no download\n");

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub ctl {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        Timeout => 20) or die "connect: $!";
    my $greet = <$s>;
    return ($s, $greet);
}

sub login {
    my ($u, $pw) = @_;
    my ($s) = ctl();
    ftp_cmd($s, "USER $u");
    my $r = ftp_cmd($s, "PASS $pw");
    die "login $u: $r" unless $r =~ /^230 /;
    return $s;
}

sub py {
    my ($code) = @_;
    open my $fh, '>', "$d/t.py" or die;
    print $fh "import ftplib, io, sys, os, time, hashlib, zlib\n"
        . "f = ftplib.FTP(); f.connect('127.0.0.1', $port, timeout=20)\n"
        . $code;
    close $fh;
    return `cd $d && python3 t.py 2>&1`;
}

# HASH

my $want = py(<<'EOF');
b = open('data/alice/rand.bin', 'rb').read()
print('sha256', hashlib.sha256(b).hexdigest())
print('sha1', hashlib.sha1(b).hexdigest())
print('md5', hashlib.md5(b).hexdigest())
print('crc32', '%08x' % (zlib.crc32(b) & 0xffffffff))
print('sha512', hashlib.sha512(b).hexdigest())
EOF
my %want = $want =~ /^(\w+) ([0-9a-f]+)$/mg;
is(scalar(keys %want), 5, 'python digests') or diag($want);

my ($s) = ctl();
like(ftp_cmd($s, 'FEAT'), qr/^ HASH SHA-256\*;SHA-1;MD5;CRC32;CRC32C;SHA-512\r$/m,
    'FEAT: HASH, SHA-256 selected');
like(ftp_cmd($s, 'HASH rand.bin'), qr/^530 /, 'HASH before login: 530');
like(ftp_cmd($s, 'OPTS HASH'), qr/^200 SHA-256\r/, 'OPTS HASH: current');
like(ftp_cmd($s, 'OPTS HASH SHA-384'), qr/^501 /, 'OPTS HASH unknown: 501');
ftp_cmd($s, 'USER alice');
like(ftp_cmd($s, 'PASS pw-a'), qr/^230 /, 'login');
like(ftp_cmd($s, 'HASH rand.bin'),
    qr/^213 SHA-256 0-3145727 $want{sha256} rand.bin\r$/m, 'HASH SHA-256');
like(ftp_cmd($s, 'OPTS HASH SHA-1'), qr/^200 SHA-1\r/, 'OPTS HASH SHA-1');
like(ftp_cmd($s, 'FEAT'), qr/^ HASH SHA-256;SHA-1\*;MD5;CRC32;CRC32C;SHA-512\r$/m,
    'FEAT: SHA-1 starred');
like(ftp_cmd($s, 'HASH /rand.bin'),
    qr/^213 SHA-1 0-3145727 $want{sha1} \/rand.bin\r$/m, 'HASH SHA-1');
like(ftp_cmd($s, 'OPTS HASH md5'), qr/^200 MD5\r/, 'OPTS HASH md5');
like(ftp_cmd($s, 'HASH rand.bin'),
    qr/^213 MD5 0-3145727 $want{md5} rand.bin\r$/m, 'HASH MD5');
like(ftp_cmd($s, 'OPTS HASH CRC32'), qr/^200 CRC32\r/, 'OPTS HASH CRC32');
like(ftp_cmd($s, 'HASH rand.bin'),
    qr/^213 CRC32 0-3145727 $want{crc32} rand.bin\r$/m, 'HASH CRC32');
like(ftp_cmd($s, 'OPTS HASH sha-512'), qr/^200 SHA-512\r/,
    'OPTS HASH sha-512');
like(ftp_cmd($s, 'HASH rand.bin'),
    qr/^213 SHA-512 0-3145727 $want{sha512} rand.bin\r$/m, 'HASH SHA-512');
like(ftp_cmd($s, 'HASH missing.bin'), qr/^550 /, 'HASH missing file: 550');
like(ftp_cmd($s, 'HASH ../ro/r.txt'), qr/^550 /, 'HASH outside home: 550');
like(ftp_cmd($s, 'HASH'), qr/^501 /, 'HASH without a path: 501');
like(ftp_cmd($s, 'MKD dir'), qr/^257 /, 'MKD');
like(ftp_cmd($s, 'HASH dir'), qr/^550 /, 'HASH of a directory: 550');

# pipelined: the second waits for the first
print $s "OPTS HASH SHA-256\r\nHASH rand.bin\r\nNOOP\r\n";
like(scalar <$s>, qr/^200 SHA-256/, 'pipelined OPTS');
like(scalar <$s>, qr/^213 SHA-256 0-3145727 $want{sha256} /,
    'pipelined HASH');
like(scalar <$s>, qr/^200 NOOP/, 'pipelined NOOP after it');

# closed while hashing: the worker goes on
print $s "HASH rand.bin\r\n";
close $s;

$t->write_file('data/alice/empty', '');
$s = login('alice', 'pw-a');
like(ftp_cmd($s, 'HASH empty'),
    qr/^213 SHA-256 0-0 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 empty\r/,
    'HASH of an empty file');
ftp_cmd($s, 'QUIT');

$s = login('nd', 'pw-n');
like(ftp_cmd($s, 'HASH n.txt'), qr/^550 Permission denied/,
    'HASH without the download permission: 550');
ftp_cmd($s, 'QUIT');

$s = login('ro', 'pw-r');
like(ftp_cmd($s, 'HASH r.txt'), qr/^213 SHA-256 0-9 [0-9a-f]{64} r.txt\r/,
    'HASH with download only');
ftp_cmd($s, 'QUIT');

# SITE, MFMT, STOU, LIST/NLST of one file, STAT path, REIN

$t->write_file('data/alice/m.txt', "mtime\n");
$s = login('alice', 'pw-a');
like(ftp_cmd($s, 'SITE HELP'), qr/^214-.*CHMOD.*^214 /ms, 'SITE HELP');
like(ftp_cmd($s, 'SITE CHMOD 600 m.txt'), qr/^200 /, 'SITE CHMOD 600');
is((stat "$d/data/alice/m.txt")[2] & 07777, 0600, 'mode is 0600');
like(ftp_cmd($s, 'SITE CHMOD 0755 m.txt'), qr/^200 /, 'SITE CHMOD 0755');
is((stat "$d/data/alice/m.txt")[2] & 07777, 0755, 'mode is 0755');
like(ftp_cmd($s, 'SITE CHMOD 9 m.txt'), qr/^501 /, 'SITE CHMOD bad mode: 501');
like(ftp_cmd($s, 'SITE CHMOD 644'), qr/^501 /, 'SITE CHMOD without a path');
like(ftp_cmd($s, 'SITE CHMOD 644 nothing'), qr/^550 /, 'SITE CHMOD missing: 550');
like(ftp_cmd($s, 'SITE EXEC ls'), qr/^500 /, 'SITE EXEC: 500');
like(ftp_cmd($s, 'SITE'), qr/^501 /, 'SITE without an argument: 501');

like(ftp_cmd($s, 'MFMT 20200102030405 m.txt'),
    qr/^213 Modify=20200102030405; m.txt\r/, 'MFMT');
is((stat "$d/data/alice/m.txt")[9], 1577934245, 'mtime set (UTC)');
like(ftp_cmd($s, 'MDTM m.txt'), qr/^213 20200102030405\r/, 'MDTM agrees');
like(ftp_cmd($s, 'MFMT 2020010203040 m.txt'), qr/^501 /, 'MFMT short time');
like(ftp_cmd($s, 'MFMT 20201302030405 m.txt'), qr/^501 /, 'MFMT month 13');
like(ftp_cmd($s, 'MFMT 20200102030405 nothing'), qr/^550 /, 'MFMT missing');

like(ftp_cmd($s, 'STAT m.txt'),
    qr/^213-Status of m.txt:\r\n-rwxr-xr-x +1 ftp +ftp +6 Jan +2 +2020 m.txt\r\n213 End of status.\r\n\z/,
    'STAT of a file');
my $st = ftp_cmd($s, 'STAT /');
like($st, qr/^213-Status of \/:\r\n/, 'STAT of a directory');
like($st, qr/^-r.* rand\.bin\r$/m, 'STAT lists a file');
like($st, qr/^d.* dir\r$/m, 'STAT lists a directory');
like($st, qr/^213 End of status.\r\n\z/m, 'STAT end');
like(ftp_cmd($s, 'STAT nothing'), qr/^550 /, 'STAT missing: 550');
mkdir "$d/data/alice/many";
for my $i (1 .. 300) {
    open my $fh, '>', "$d/data/alice/many/" . ('f' x 40) . $i or die;
    close $fh;
}
$st = ftp_cmd($s, 'STAT many');
like($st, qr/^213 End of status \(truncated\)\.\r\n\z/m,
    'STAT of a big directory is truncated');
ok(length($st) < 8192, 'within the reply buffer');
like(ftp_cmd($s, 'NOOP'), qr/^200 /, 'and the session goes on');
ftp_cmd($s, 'QUIT');

$s = login('ro', 'pw-r');
like(ftp_cmd($s, 'SITE CHMOD 777 r.txt'), qr/^550 Permission denied/,
    'SITE CHMOD without the chmod permission: 550');
like(ftp_cmd($s, 'MFMT 20200102030405 r.txt'), qr/^550 /,
    'MFMT without upload: 550');
like(ftp_cmd($s, 'STOU'), qr/^425 /, 'STOU without PASV: 425');
ftp_cmd($s, 'QUIT');

my $r = py(<<'EOF');
f.login('alice', 'pw-a')
f.voidcmd('TYPE I')
c, size = f.ntransfercmd('STOU')
c.sendall(b'unique-1'); c.close()
print('stou226', f.voidresp())
c, size = f.ntransfercmd('STOU up.txt')
c.sendall(b'unique-2'); c.close()
f.voidresp()
print('names', sorted(n for n in os.listdir('data/alice') if n.startswith(('stou.', 'up.txt.'))))
lines = []; f.retrlines('LIST m.txt', lines.append)
print('list1', lines)
lines = []; f.retrlines('LIST -l dir/../m.txt', lines.append)
print('list2', lines)
print('nlst1', f.nlst('m.txt'))
try:
    f.nlst('nothing')
except ftplib.error_perm as e:
    print('nlst-missing', e)
print('rein', f.sendcmd('REIN'))
try:
    f.sendcmd('PWD')
except ftplib.error_perm as e:
    print('after-rein', e)
f.login('ro', 'pw-r')
print('pwd', f.pwd())
print('nlst-ro', f.nlst())
f.quit()
EOF
like($r, qr/^stou226 226 /m, 'STOU: 226');
like($r, qr/^names \['stou\.\d+\.\d+\.\d+', 'up\.txt\.\d+\.\d+\.\d+'\]$/m,
    'STOU: two unique names');
my @u = glob("$d/data/alice/stou.*");
is(scalar(@u), 1, 'one stou file');
is($u[0] && $t->read_file('data/alice/' . ($u[0] =~ s/.*\///r)), 'unique-1',
    'STOU content');
like($r, qr/^list1 \['-rwxr-xr-x +1 ftp +ftp +6 Jan +2 +2020 m.txt'\]$/m,
    'LIST of one file');
like($r, qr/^list2 \['-rwx.* dir\/..\/m.txt'\]$/m, 'LIST -l of one file');
like($r, qr/^nlst1 \['m.txt'\]$/m, 'NLST of one file');
like($r, qr/^nlst-missing 550 /m, 'NLST of a missing name: 550');
like($r, qr/^rein 220 /m, 'REIN: 220');
like($r, qr/^after-rein 530 /m, 'after REIN: 530');
like($r, qr/^pwd \/$/m, 'login as another user after REIN');
like($r, qr/^nlst-ro \['r.txt'\]$/m, 'and her files');

# the 150 of STOU, raw
$s = login('alice', 'pw-a');
my $pasv = ftp_cmd($s, 'PASV');
my ($p1, $p2) = $pasv =~ /,(\d+),(\d+)\)/;
my $dc = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . ($p1 * 256 + $p2))
    or die "data: $!";
like(ftp_cmd($s, 'STOU raw'), qr/^150 FILE: raw\.\d+\.\d+\.\d+\r/,
    'STOU: 150 FILE:');
print $dc "x";
close $dc;
like(scalar <$s>, qr/^226 /, 'STOU raw: 226');
like(ftp_cmd($s, 'REIN'), qr/^220 /, 'REIN');
like(ftp_cmd($s, 'FEAT'), qr/^211-/, 'FEAT after REIN');
like(ftp_cmd($s, 'HASH m.txt'), qr/^530 /, 'HASH after REIN: 530');
ftp_cmd($s, 'USER alice');
like(ftp_cmd($s, 'PASS pw-a'), qr/^230 /, 'login again');
like(ftp_cmd($s, 'SIZE m.txt'), qr/^550 SIZE not allowed in ASCII/,
    'TYPE back to A after REIN');
ftp_cmd($s, 'QUIT');

# per-user limits: rates (a token bucket) and max_sessions (per worker)

$r = py(<<'EOF');
f.login('rl', 'pw-l')
want = open('data/rl/one.bin', 'rb').read()
t0 = time.time()
b = io.BytesIO(); f.retrbinary('RETR one.bin', b.write)
print('down %.3f %s' % (time.time() - t0, b.getvalue() == want))
f.voidcmd('TYPE A')
t0 = time.time()
n = [0]
f.retrbinary('RETR one.bin', lambda x: n.__setitem__(0, n[0] + len(x)))
print('down-ascii %.3f %d' % (time.time() - t0, n[0]))
f.voidcmd('TYPE I')
t0 = time.time()
f.storbinary('STOR up.bin', io.BytesIO(want))
print('up %.3f %s' % (time.time() - t0, open('data/rl/up.bin', 'rb').read() == want))
f.quit()
f.connect('127.0.0.1', f.port, timeout=20)
f.login('alice', 'pw-a')
t0 = time.time()
b = io.BytesIO(); f.retrbinary('RETR rand.bin', b.write)
print('free %.3f %d' % (time.time() - t0, len(b.getvalue())))
f.quit()
EOF
my ($down) = $r =~ /^down ([\d.]+) True$/m;
ok(defined $down && $down >= 1.5,
    'RETR 1 MiB at 512 KiB/s (sendfile in slices): 1.5 s or more')
    or diag($r);
my ($da, $dn) = $r =~ /^down-ascii ([\d.]+) (\d+)$/m;
ok(defined $da && $da >= 1.5 && $dn >= 1048576,
    'TYPE A RETR (pooled copy) limited too') or diag($r);
my ($up) = $r =~ /^up ([\d.]+) True$/m;
ok(defined $up && $up >= 1.5,
    'STOR 1 MiB at 512 KiB/s: 1.5 s or more') or diag($r);
my ($free, $fn) = $r =~ /^free ([\d.]+) (\d+)$/m;
ok(defined $free && $fn == 3145728 && $free < 6,
    'an unlimited user is not held to 512 KiB/s (3 MiB in 6 s)') or diag($r);

my @l = map { login('rl', 'pw-l') } 1 .. 2;
my ($s3) = ctl();
ftp_cmd($s3, 'USER rl');
like(ftp_cmd($s3, 'PASS pw-l'), qr/^530 Too many sessions/,
    'max_sessions 2: the third gets 530');
like(ftp_cmd($l[0], 'REIN'), qr/^220 /, 'REIN frees a slot');
ftp_cmd($s3, 'USER rl');
like(ftp_cmd($s3, 'PASS pw-l'), qr/^230 /, 'so the third logs in');
ftp_cmd($l[0], 'USER rl');
like(ftp_cmd($l[0], 'PASS pw-l'), qr/^530 Too many sessions/,
    'and the first cannot log in again');
ftp_cmd($l[1], 'QUIT');
close $l[1];
my $ok = '';
for (1 .. 50) {
    ftp_cmd($l[0], 'USER rl');
    $ok = ftp_cmd($l[0], 'PASS pw-l');
    last if $ok =~ /^230 /;
    select undef, undef, undef, 0.1;
}
like($ok, qr/^230 /, 'a closed session frees its slot');
ftp_cmd($_, 'QUIT') for $l[0], $s3;

done_testing();
