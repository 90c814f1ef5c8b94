#!/usr/bin/perl

# ftp_upload_chunks.t -- pooled uploads to a disk, where each chunk is
# written on the thread pool while the next one is received: with 4 KiB
# chunks, binary (FTPS) and TYPE A uploads of many chunks arrive whole
# and in order, a lone CR that ends a TYPE A upload right after a full
# chunk is kept, and an upload the client cuts off is not committed while
# the session goes on.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Ftps qw/add_user passive_range same py_run/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
transfer_chunk_bytes 4k;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8071%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        splice off;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        tls_data             optional;
        data_timeout         20s;
    }
}
EOF

passive_range($t, 8100);

system("head -c 1048583 /dev/urandom > $d/big") == 0 or die;

add_user($t, 'alice', 'pw-a', '--home', '/alice',
    '--perms', 'list,download,upload,overwrite,delete');

$t->run();

my $port = port(8071);

my $out = py_run($t, <<"PY");
f = open_tls(Reuse, $port)
f.prot_p()
f.storbinary('STOR tls.bin', io.BytesIO(big), 8192)
print('tls', open('data/alice/tls.bin', 'rb').read() == big)
f.prot_c()
f.storbinary('STOR plain.bin', io.BytesIO(big), 65536)
print('plain', open('data/alice/plain.bin', 'rb').read() == big)

# TYPE A: CRLF split across chunks and writes, lone CRs kept
lines = b''.join(b'line %d\\r\\n' % i + (b'x\\ry' if i % 7 == 0 else b'')
                 for i in range(20000))
f.voidcmd('TYPE A')
c = f.transfercmd('STOR a.txt')
for i in range(0, len(lines), 4093):
    c.sendall(lines[i:i + 4093])
c.close()
f.voidresp()
print('ascii', open('data/alice/a.txt', 'rb').read() == lines.replace(b'\\r\\n', b'\\n'))

# three full chunks, then a CR the upload ends with
data = b'a' * (3 * 4096) + b'\\r'
c = f.transfercmd('STOR cr.txt')
c.sendall(data)
c.close()
f.voidresp()
got = open('data/alice/cr.txt', 'rb').read()
print('lonecr', len(got), got[-1:] == b'\\r')
f.voidcmd('TYPE I')

# an upload cut off with a reset: 426, nothing committed
c = f.transfercmd('STOR cut.bin')
c.sendall(big[:500000])
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00')
c.close()
try:
    print('cut', f.voidresp())
except ftplib.error_temp as e:
    print('cut', str(e)[:3])
print('cutfile', os.path.exists('data/alice/cut.bin'))
print('noop', f.voidcmd('NOOP')[:3])
f.quit()
PY

like($out, qr/^tls True$/m, 'FTPS upload of 1 MiB in 4 KiB chunks, whole');
like($out, qr/^plain True$/m, 'plain pooled upload of 1 MiB, whole');
like($out, qr/^ascii True$/m, 'TYPE A upload: CRLF -> LF across chunks');
like($out, qr/^lonecr 12289 True$/m,
    'a lone CR after three full chunks is kept');
like($out, qr/^cut 426$/m, 'an upload cut with a reset: 426');
like($out, qr/^cutfile False$/m, 'and nothing is committed');
like($out, qr/^noop 200$/m, 'the session goes on') or diag($out);

$t->stop();

unlike($t->read_file('error.log'), qr/\[(alert|crit|emerg)\]/,
    'no alert in the error log');

done_testing();
