#!/usr/bin/perl

# digest_cancel.t -- a digest stops when its session goes away: with one
# thread in the pool, an FTP HASH or an SFTP check-file of a 1 TiB sparse
# file whose client left would hold the thread for many minutes; the next
# session's digest is answered as soon as the first one has stopped.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_cmd ftp_connect/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp');
my $d = $t->testdir();

ftp_conf($t, main => <<'EOF');
thread_pool default threads=1 max_queue=16;
sftp { server { listen 127.0.0.1:%%PORT_8022%%; storage local;
                host_key %%TESTDIR%%/ssh/host_ed25519_key; } }
EOF
ftp_user($t, 'alice', 'pw-a', 'list,download');

$t->write_file('data/alice/check', '123456789');
truncate_big("$d/data/alice/big") or plan(skip_all => 'no sparse file');

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub truncate_big {
    my ($path) = @_;

    open my $f, '>', $path or return 0;
    my $ok = truncate($f, 1 << 40);
    close $f;

    return $ok;
}

sub login {
    my $s = ftp_connect($port);
    ftp_cmd($s, 'USER alice');
    return (ftp_cmd($s, 'PASS pw-a') =~ /^230 /) ? $s : undef;
}

# the first client asks for the digest of the big file and leaves

my $s = login();
ok($s, 'login');
print $s "HASH big\r\n";
select(undef, undef, undef, 0.5);
close $s;

# the second one is answered once the first digest has stopped: the
# limit is far above a stop, far below hashing a TiB

$s = login();
ok($s, 'a second login while the first digest runs');

local $SIG{ALRM} = sub { die "timeout\n" };
my $r = eval {
    alarm(60);
    my $reply = ftp_cmd($s, 'OPTS HASH CRC32') . ftp_cmd($s, 'HASH check');
    alarm(0);
    $reply;
} // '';

like($r, qr/^213 CRC32 0-8 cbf43926 check\r$/m,
    'HASH answered: the abandoned digest stopped');

close $s;

# the same over SFTP, with paramiko

SKIP: {
skip('no paramiko', 1)
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

$t->write_file('client.py', <<'EOF');
import sys, struct, paramiko
from paramiko.sftp import CMD_EXTENDED

port = int(sys.argv[1])

class Raw(paramiko.SFTPAttributes):
    # paramiko packs every int as uint64: the uint32 block size goes raw
    def __init__(self, b):
        self.b = b
    def _pack(self, msg):
        msg.add_bytes(self.b)

def session():
    tr = paramiko.Transport(('127.0.0.1', port))
    tr.connect(username='alice', password='pw-a')
    return tr, paramiko.SFTPClient.from_transport(tr)

def check_file(sftp, name, algo):
    return sftp._async_request(type(None), CMD_EXTENDED, 'check-file-name',
                               name, algo, Raw(struct.pack('>QQI', 0, 0, 0)))

tr, sftp = session()
check_file(sftp, 'big', 'sha256')
tr.close()

tr, sftp = session()
sftp.get_channel().settimeout(60)
try:
    t, msg = sftp._read_response(check_file(sftp, 'check', 'crc32'))
    print('answer %s %s %s' % (msg.get_text(), msg.get_text(),
                               msg.get_remainder().hex()))
except Exception as e:
    print('failed %r' % e)
tr.close()
EOF

my $out = `timeout 120 /usr/bin/python3 $d/client.py @{[ port(8022) ]} 2>&1`;

like($out, qr/^answer check-file crc32 cbf43926$/m,
    'check-file answered: the abandoned digest stopped');
}

$t->done();
