#!/usr/bin/perl

# ftp_large.t -- a file larger than 4 GiB (sparse, so nothing big is
# written or sent): SIZE, MLST, LIST and STAT name the 64-bit size; REST
# just before 4 GiB and RETR send the right tail bytes, through sendfile
# (TYPE I) and through the pooled copy (TYPE A); RANG + HASH across the
# 4 GiB boundary agree with Python's hashlib.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

ftp_conf($t);
ftp_user($t, 'alice', 'pw-a', 'list,download');

# 4 GiB + 3 MiB: a hole, then 4 MiB of random bytes from 4 GiB - 1 MiB

my $G4 = 4294967296;
my $size = $G4 + 3 * 1048576;
my $tail = $G4 - 1048576;

my $made = system('python3', '-c', <<"EOF", "$d/data/alice/big.bin");
import os, sys
with open(sys.argv[1], 'wb') as f:
    f.truncate($size)
    f.seek($tail)
    f.write(os.urandom($size - $tail))
EOF
plan(skip_all => 'no sparse file of 4 GiB here') if $made != 0;

my @st = stat("$d/data/alice/big.bin");
plan(skip_all => 'the file system does not keep holes')
    if $st[12] * 512 > 64 * 1048576;

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

open my $py, '>', "$d/big.py" or die;
print $py <<"EOF";
import ftplib, hashlib
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=60)
f.login('alice', 'pw-a')
with open('$d/data/alice/big.bin', 'rb') as fh:
    fh.seek($tail)
    want = fh.read()
f.voidcmd('TYPE I')
print('size', f.size('big.bin'))
print('mlst', f.sendcmd('MLST big.bin').split('\\n')[1])
lines = []
f.retrlines('LIST big.bin', lines.append)
print('list', lines)
print('stat', f.sendcmd('STAT big.bin').split('\\n')[1])

# TYPE I: sendfile from past 4 GiB - 1 MiB and from past 4 GiB
out = []
f.retrbinary('RETR big.bin', out.append, rest=$tail)
got = b''.join(out)
print('retr1', len(got), got == want)
out = []
f.retrbinary('RETR big.bin', out.append, rest=$G4 + 12345)
got = b''.join(out)
print('retr2', len(got), got == want[$G4 + 12345 - $tail:])

# TYPE A: the pooled copy, LF becomes CRLF
f.voidcmd('TYPE A')
c = f.transfercmd('RETR big.bin', rest=$G4 - 1000)
got = b''
while True:
    b = c.recv(65536)
    if not b:
        break
    got += b
c.close()
f.voidresp()
print('ascii', got == want[$G4 - 1000 - $tail:].replace(b'\\n', b'\\r\\n'))

# RANG across 4 GiB, HASH
s, e = $G4 - 5000, $G4 + 5000
print('rang', f.sendcmd('RANG %d %d' % (s, e))[:3])
print('hash', f.sendcmd('HASH big.bin'))
print('want', hashlib.sha256(want[s - $tail:e + 1 - $tail]).hexdigest())
print('rest', f.sendcmd('REST %d' % ($size + 1))[:3])
f.voidcmd('TYPE I')
try:
    f.retrbinary('RETR big.bin', lambda b: None)
except ftplib.error_perm as x:
    print('past', str(x)[:3])
f.quit()
EOF
close $py;

my $r = `python3 $d/big.py 2>&1`;

like($r, qr/^size $size$/m, "SIZE: $size");
like($r, qr/^mlst  ?type=file;size=$size;/m, 'MLST size');
like($r, qr/^list \['-r.* $size \w{3} [ \d]\d [ \d:]{5} big.bin'\]$/m,
    'LIST size');
like($r, qr/^stat -r.* $size .*big.bin/m, 'STAT size');
like($r, qr/^retr1 4194304 True$/m,
    'REST 4 GiB - 1 MiB + RETR (sendfile): the 4 MiB tail');
like($r, qr/^retr2 @{[$size - $G4 - 12345]} True$/m,
    'REST past 4 GiB + RETR: the right bytes');
like($r, qr/^ascii True$/m, 'TYPE A REST near 4 GiB: converted tail');
like($r, qr/^rang 350$/m, 'RANG across 4 GiB');
my ($want) = $r =~ /^want ([0-9a-f]+)$/m;
like($r, qr/^hash 213 SHA-256 @{[$G4 - 5000]}-@{[$G4 + 5000]} $want big.bin$/m,
    'HASH of a range across 4 GiB is hashlib\'s');
like($r, qr/^rest 350$/m, 'REST past the end: 350');
like($r, qr/^past 5\d\d$/m, '... and RETR then fails with 5xx');

$t->done();
