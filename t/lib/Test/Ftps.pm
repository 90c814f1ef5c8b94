package Test::Ftps;

# Test::Ftps -- what the FTPS tests share: a user added with the CLI, a
# passive range of 41 ports from a free one, byte-for-byte comparison, and
# Python ftplib code run after a prelude (an FTP_TLS context that does not
# verify the server, and Reuse, which resumes the control connection's
# session on data connections; tls_prelude() is that part alone).

use warnings;
use strict;

use Exporter qw/import/;
use Test::Siftpd qw/port/;

our @EXPORT_OK = qw/add_user passive_range same py_run tls_prelude/;

# siftpd user add NAME, the password on stdin, extra arguments as given
sub add_user {
    my ($t, $name, $pw, @args) = @_;
    my $d = $t->testdir();

    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $name, @args or die "user add: $!";
    print $fh "$pw\n";
    close $fh;
}

# "passive_ports P-P" (P from %%PORT_n%%) becomes P-(P+40)
sub passive_range {
    my ($t, $n) = @_;
    my $lo = port($n);

    my $conf = $t->read_file('siftpd.conf');
    $conf =~ s/passive_ports $lo-$lo/"passive_ports $lo-" . ($lo + 40)/ge;
    $t->write_file('siftpd.conf', $conf);
}

sub same {
    my ($a, $b) = @_;
    return system('cmp', '-s', $a, $b) == 0;
}

# Python: an SSL context that does not verify, and Reuse
my $tls_prelude = <<'PY';
import ftplib, io, ssl, sys, os, socket
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
class Reuse(ftplib.FTP_TLS):
    def ntransfercmd(self, cmd, rest=None):
        conn, size = ftplib.FTP.ntransfercmd(self, cmd, rest)
        if self._prot_p:
            conn = self.context.wrap_socket(conn,
                server_hostname=self.host, session=self.sock.session)
        return conn, size
PY

sub tls_prelude { $tls_prelude }

my $prelude = $tls_prelude . <<'PY';
big = open('big', 'rb').read()
def open_tls(cls, port):
    f = cls(context=ctx, timeout=20)
    f.connect('127.0.0.1', port)
    f.auth(); f.login('alice', 'pw-a'); return f
PY

# runs the prelude and code in the test directory; the output
sub py_run {
    my ($t, $code) = @_;
    my $d = $t->testdir();

    open my $fh, '>', "$d/t.py" or die;
    print $fh $prelude . $code;
    close $fh;

    return `cd $d && timeout 120 python3 t.py 2>&1`;
}

1;
