#!/usr/bin/perl

# session_table_wrap.t -- the shared sessions table once every slot has
# been used: with one worker of 64 connections the table has about 66
# slots; 300 FTP sessions one after another use them all and come round
# again.  Sessions after that are listed by /api/v1/sessions in slots of
# the table (their ids are "SLOT-GEN": a slot under 128), never past its
# end, where the shared memory next to it (the buffer pool) lies: an SFTP
# upload and download through pool chunks stay byte-identical, and the
# pool has every chunk back at the end.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http')->has('ftp')->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no sftp or ssh-keygen')
    unless -x '/usr/bin/sftp' && -x '/usr/bin/ssh-keygen';

my $admin = 'admin-token-0123456789abcdef';
$t->write_file('tokens', "$admin admin ops\n");

mkdir "$d/data";
mkdir "$d/data/bob";

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
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
    }
}
EOF

$t->user_add('bob', 'pw', perms => 'all');
$t->user_key('bob');

$t->run();

$t->write_file('wrap.py', <<'PY');
import ftplib, json, sys, urllib.request

ftp_port, http_port, token, n = (sys.argv[1], int(sys.argv[2]),
                                 sys.argv[3], int(sys.argv[4]))

def sessions():
    req = urllib.request.Request(
        'http://127.0.0.1:%d/api/v1/sessions' % http_port,
        headers={'Authorization': 'Bearer ' + token})
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())

# one after another, each with some bytes in (its NOOP)
done = 0
for i in range(n):
    f = ftplib.FTP()
    f.connect('127.0.0.1', int(ftp_port), timeout=20)
    if f.sendcmd('NOOP').startswith('200'):
        done += 1
    f.quit()
print('noop', done)

# two at once after the table came round: both listed, with their users
a, b = ftplib.FTP(), ftplib.FTP()
for f in (a, b):
    f.connect('127.0.0.1', int(ftp_port), timeout=20)
    f.login('bob', 'pw')
live = [s for s in sessions() if s.get('protocol') == 'ftp']
print('listed', sorted(s.get('user') for s in live))
print('slots', sorted(int(s['id'].split('-')[0]) for s in live))
a.quit()
b.quit()
PY

my $out = `timeout 300 python3 $d/wrap.py @{[ port(8021) ]} @{[ port(8080) ]} $admin 300 2>&1`;
like($out, qr/^noop 300$/m, '300 sessions, one after another, each answered')
    or diag($out);
like($out, qr/^listed \['bob', 'bob'\]$/m,
    'after the table came round: the live sessions listed')
    or diag($out);
my @slots = $out =~ /^slots \[(\d+), (\d+)\]$/m;
ok(@slots == 2 && $slots[0] < 128 && $slots[1] < 128,
    'in slots of the table, not past its end') or diag($out);

# the buffer pool past the table: an SFTP transfer through its chunks

open(my $fh, '>', "$d/up.bin") or die "up.bin: $!";
print $fh pack('N*', map { $_ * 2654435761 % 4294967296 } 1 .. 1048576);
close($fh);

my ($rc, $sftp) = $t->sftp_batch(port(8022), 'bob',
    "put $d/up.bin up.bin\nget up.bin $d/down.bin\n");
is($rc, 0, 'an SFTP put and get after the table came round') or diag($sftp);
ok(-s "$d/down.bin" && $t->read_file('down.bin') eq $t->read_file('up.bin'),
    'byte-identical');

my $stats = `curl -s --max-time 20 -H 'Authorization: Bearer $admin' http://127.0.0.1:@{[ port(8080) ]}/api/v1/stats`;
like($stats, qr/"buffer_pool":\s*\{[^}]*"in_use":\s*0\b/,
    'every pool chunk back') or diag($stats);

$t->stop();

unlike($t->read_file('error.log'), qr/\[(alert|emerg)\]/,
    'no alert in the error log');

done_testing();
