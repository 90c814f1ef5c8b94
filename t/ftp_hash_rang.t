#!/usr/bin/perl

# ftp_hash_rang.t -- RANG (draft-bryan-ftp-range) for partial HASH and
# ranged RETR, checked against Python's hashlib on byte slices, and HASH
# CRC32C (the asm kernel) against a small Python CRC-32C reference.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_cmd ftp_connect/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

ftp_conf($t);
ftp_user($t, 'alice', 'pw-a', 'list,download,upload,overwrite');

# 200000 bytes: more than three 64 KiB chunks of the hashing thread
my $size = 200000;
system("head -c $size /dev/urandom > $d/data/alice/r.bin") == 0 or die;

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);


# the expected digests of [start, end] slices (end included), by Python

my @ranges = ([0, 99], [100, 199], [0, 0], [65530, 131080],
              [$size - 10, $size + 1000], [0, $size - 1]);

open my $py, '>', "$d/ref.py" or die;
print $py <<'EOF';
import hashlib, sys
sys.path.insert(0, 't/lib')
from crc32c import crc32c

print('check %08x' % crc32c(b'123456789'))
b = open(sys.argv[1], 'rb').read()
for a in sys.argv[2:]:
    s, e = map(int, a.split('-'))
    part = b[s:e + 1]
    print('%s sha256 %s' % (a, hashlib.sha256(part).hexdigest()))
    print('%s sha1 %s' % (a, hashlib.sha1(part).hexdigest()))
    print('%s crc32c %08x' % (a, crc32c(part)))
EOF
close $py;

my $args = join(' ', map { "$_->[0]-$_->[1]" } @ranges);
my $ref = `python3 $d/ref.py $d/data/alice/r.bin $args`;
my %want = $ref =~ /^(\d+-\d+ \w+) ([0-9a-f]+)$/mg;

like($ref, qr/^check e3069283$/m,
    'python CRC-32C reference: check value of "123456789"');
is(scalar(keys %want), 3 * @ranges, 'python digests of the ranges');

my $s = ftp_connect($port);

my $feat = ftp_cmd($s, 'FEAT');
like($feat, qr/^ RANG STREAM\r$/m, 'FEAT lists RANG STREAM');
like($feat, qr/^ HASH SHA-256\*;SHA-1;MD5;CRC32;CRC32C;SHA-512\r$/m,
    'FEAT lists CRC32C among the HASH algorithms');
like(ftp_cmd($s, 'RANG 0 9'), qr/^530 /, 'RANG before login: 530');

ftp_cmd($s, 'USER alice');
like(ftp_cmd($s, 'PASS pw-a'), qr/^230 /, 'login');

for my $r (@ranges) {
    my ($a, $b) = @$r;
    my $last = $b >= $size ? $size - 1 : $b;
    my $k = "$a-$b";

    like(ftp_cmd($s, "RANG $a $b"), qr/^350 /, "RANG $a $b: 350");
    like(ftp_cmd($s, 'HASH r.bin'),
        qr/^213 SHA-256 $a-$last $want{"$k sha256"} r.bin\r$/m,
        "HASH SHA-256 of $a-$b is hashlib's of the slice");
}

like(ftp_cmd($s, 'HASH r.bin'),
    qr/^213 SHA-256 0-@{[$size - 1]} $want{"0-@{[$size - 1]} sha256"} /m,
    'a RANG is good for one HASH: the next is of the whole file');

like(ftp_cmd($s, 'OPTS HASH SHA-1'), qr/^200 SHA-1\r/, 'OPTS HASH SHA-1');
ftp_cmd($s, 'RANG 100 199');
like(ftp_cmd($s, 'HASH r.bin'), qr/^213 SHA-1 100-199 $want{'100-199 sha1'} /m,
    'HASH SHA-1 of a range');

# errors

like(ftp_cmd($s, 'RANG 5 4'), qr/^501 /, 'RANG start after end: 501');
like(ftp_cmd($s, 'HASH r.bin'), qr/^213 SHA-1 0-@{[$size - 1]} /m,
    '... and the range is reset');
ftp_cmd($s, 'RANG 10 20');
like(ftp_cmd($s, 'RANG 1 0'), qr/^350 /, 'RANG 1 0: 350');
like(ftp_cmd($s, 'HASH r.bin'), qr/^213 SHA-1 0-@{[$size - 1]} /m,
    '... resets the range');
like(ftp_cmd($s, "RANG $size " . ($size + 5)), qr/^350 /,
    'RANG starting at the end of the file: 350');
like(ftp_cmd($s, 'HASH r.bin'), qr/^554 /,
    '... and HASH of it: 554, nothing to hash');
like(ftp_cmd($s, 'HASH r.bin'), qr/^213 SHA-1 0-/m, '... then reset');
like(ftp_cmd($s, 'RANG 5'), qr/^501 /, 'RANG with one number: 501');
like(ftp_cmd($s, 'RANG a b'), qr/^501 /, 'RANG with letters: 501');
like(ftp_cmd($s, 'RANG -1 5'), qr/^501 /, 'RANG with a sign: 501');
like(ftp_cmd($s, 'RANG 0 99999999999999999999'), qr/^501 /,
    'RANG with an end past 2^63: 501');
like(ftp_cmd($s, 'RANG'), qr/^501 /, 'RANG without arguments: 501');

# CRC32C

like(ftp_cmd($s, 'OPTS HASH CRC32C'), qr/^200 CRC32C\r/, 'OPTS HASH CRC32C');
like(ftp_cmd($s, 'FEAT'), qr/^ HASH SHA-256;SHA-1;MD5;CRC32;CRC32C\*;SHA-512\r$/m,
    'FEAT: CRC32C starred');

for my $r (@ranges) {
    my ($a, $b) = @$r;
    my $last = $b >= $size ? $size - 1 : $b;

    ftp_cmd($s, "RANG $a $b");
    like(ftp_cmd($s, 'HASH r.bin'),
        qr/^213 CRC32C $a-$last $want{"$a-$b crc32c"} r.bin\r$/m,
        "HASH CRC32C of $a-$b is the reference's");
}

$t->write_file('data/alice/check', '123456789');
like(ftp_cmd($s, 'HASH check'), qr/^213 CRC32C 0-8 e3069283 check\r$/m,
    'HASH CRC32C check value');
ftp_cmd($s, 'QUIT');
close $s;

# RANG with transfers: RETR sends the range, STOR and TYPE A are refused

open $py, '>', "$d/retr.py" or die;
print $py <<"EOF";
import ftplib, sys
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=20)
f.login('alice', 'pw-a')
b = open('$d/data/alice/r.bin', 'rb').read()

def get(a, e):
    out = []
    print(f.sendcmd('RANG %d %d' % (a, e)))
    print(f.retrbinary('RETR r.bin', out.append))
    return b''.join(out)

print('range1', get(10, 19) == b[10:20])
print('range2', get(65530, 131080) == b[65530:131081])
print('range3', get($size - 3, $size + 100) == b[$size - 3:])
print('range4', get($size + 5, $size + 100) == b'')
out = []
f.retrbinary('RETR r.bin', out.append)
print('whole', b''.join(out) == b)
def refused(type, cmd, tag):
    f.sendcmd('TYPE ' + type)
    f.sendcmd('RANG 0 9')
    f.sendcmd('PASV')
    try:
        f.sendcmd(cmd)
    except ftplib.error_perm as e:
        print(tag, e)

refused('A', 'RETR r.bin', 'ascii')
refused('I', 'STOR new.bin', 'stor')
f.quit()
EOF
close $py;

my $out = `python3 $d/retr.py 2>&1`;
like($out, qr/^350 Restarting at 10. End Byte range at 19.\r?$/m,
    'RANG reply names the range');
like($out, qr/^range1 True$/m, 'RANG 10 19 + RETR: those 10 bytes');
like($out, qr/^range2 True$/m, 'RANG across 64 KiB boundaries + RETR');
like($out, qr/^range3 True$/m, 'RANG past the end + RETR: up to the end');
like($out, qr/^range4 True$/m, 'RANG beyond the end + RETR: 0 bytes');
like($out, qr/^whole True$/m, 'then a plain RETR: the whole file');
like($out, qr/^ascii 551 /m, 'RANG + RETR in TYPE A: 551');
like($out, qr/^stor 504 /m, 'RANG + STOR: 504');
ok(!-e "$d/data/alice/new.bin", '... and nothing stored');

$t->done();
