package Test::Siftpd::PgSQL;

# Test::Siftpd::PgSQL -- a PostgreSQL server of a test's own, for the
# PostgreSQL user store: initdb and postgres from Debian's packages run as
# "nobody" in the test directory, on a free 127.0.0.1 port (and a unix
# socket beside the data), stopped and started again by the postmaster's
# pid; psql for the rows.  A test without PostgreSQL skips.

use warnings;
use strict;

use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep time/;
use Test::More;

use Test::Siftpd;

my @servers;


sub new {
    my ($class, $t, $portnum) = @_;

    my ($bin) = reverse sort glob('/usr/lib/postgresql/*/bin');
    plan(skip_all => 'no PostgreSQL server (Debian\'s postgresql package)')
        unless $bin && -x "$bin/initdb" && -x "$bin/postgres";
    plan(skip_all => 'no psql') unless system('psql --version >/dev/null') == 0;

    my ($uid, $gid) = (getpwnam('nobody'))[2, 3];
    plan(skip_all => 'no user "nobody" to run PostgreSQL as')
        unless defined $uid;

    my $self = bless { bin => $bin, uid => $uid, gid => $gid,
        dir => $t->testdir() . '/pg',
        port => Test::Siftpd::port($portnum // 5432) },
        $class;

    mkdir $self->{dir} or die "mkdir $self->{dir}: $!";
    chown $uid, $gid, $self->{dir} or die "chown: $!";

    my $log = $t->testdir() . '/initdb.log';
    waitpid($self->_spawn($log, "$bin/initdb", '-D', $self->{dir},
        '-U', 'siftp', '-A', 'trust', '-E', 'UTF8', '--locale=C',
        '--no-sync', '--no-instructions'), 0);
    die "initdb failed:\n" . _read($log) if $?;

    push @servers, $self;

    return $self;
}

sub conninfo {
    my ($self) = @_;
    return "host=127.0.0.1 port=$self->{port} dbname=postgres user=siftp "
        . 'sslmode=disable gssencmode=disable connect_timeout=5';
}

# postgres in the foreground of its own process: that pid is stopped
sub start {
    my ($self) = @_;

    my $pid = $self->_spawn("$self->{dir}/postgres.log",
        "$self->{bin}/postgres", '-D', $self->{dir},
        '-c', 'listen_addresses=127.0.0.1', '-p', $self->{port},
        '-k', $self->{dir}, '-c', 'fsync=off', '-c', 'max_connections=40');

    $self->{pid} = $pid;

    my $end = time() + 60;
    while (time() < $end) {
        return $self if $self->psql('SELECT 1') eq '1';
        die "postgres did not start:\n" . _read("$self->{dir}/postgres.log")
            if waitpid($pid, WNOHANG) == $pid;
        sleep 0.1;
    }

    die "postgres did not answer:\n" . _read("$self->{dir}/postgres.log");
}

# a node's siftpd.conf on this store: FTP, SFTP (when given a port) and
# the admin API on the Test::Siftpd ports numbered so
sub node_conf {
    my ($self, $t, $ftp, $sftp, $http) = @_;

    my $conninfo = $self->conninfo();
    my $sftp_conf = !$sftp ? '' : "sftp { server { "
        . "listen 127.0.0.1:%%PORT_$sftp%%; "
        . "host_key %%TESTDIR%%/host_ed25519_key; storage local; } }";

    mkdir $t->testdir() . '/data';
    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
user_store postgresql "$conninfo";
login_max_failures 1000;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_$ftp%%; storage local; } }
$sftp_conf
http { server { listen 127.0.0.1:%%PORT_$http%%; } }
EOF
}

# a login over "ftp" or "sftp" (paramiko): "ok", the FTP server's reply
# to PASS, or "refused"
sub login {
    my ($self, $t, $proto, $port, $user, $pass) = @_;

    my $py = $t->testdir() . '/login.py';
    $t->write_file('login.py', <<'PY') unless -f $py;
import ftplib, socket, sys

proto, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    sys.argv[4]

if proto == 'ftp':
    try:
        f = ftplib.FTP()
        f.connect('127.0.0.1', port, timeout=15)
        f.login(user, password)
        print('ok')
        f.quit()
    except (ftplib.error_perm, ftplib.error_temp) as e:
        print(str(e).strip())
else:
    import paramiko
    s = socket.create_connection(('127.0.0.1', port), timeout=15)
    tr = paramiko.Transport(s)
    try:
        tr.connect(username=user, password=password)
        sftp = paramiko.SFTPClient.from_transport(tr)
        sftp.listdir('.')
        print('ok')
    except paramiko.AuthenticationException:
        print('refused')
    finally:
        tr.close()
PY

    my $out = `timeout 30 /usr/bin/python3 $py $proto $port $user $pass 2>&1`;
    $out =~ s/\s+\z//;

    return $out;
}

# a fast shutdown: the clients' connections are cut
sub stop {
    my ($self) = @_;

    my $pid = delete $self->{pid} or return;
    kill 'INT', $pid;
    waitpid($pid, 0);
}

# the rows of a statement, "|" between columns, a line each; '' on error
sub psql {
    my ($self, $sql) = @_;

    my $pid = open(my $fh, '-|') // die "fork: $!";

    if ($pid == 0) {
        open STDERR, '>', '/dev/null';
        exec 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
            '-h', '127.0.0.1', '-p', $self->{port}, '-U', 'siftp',
            '-d', 'postgres', '-c', $sql;
        exit 127;
    }

    local $/;
    my $out = <$fh> // '';
    close $fh;
    $out =~ s/\s+\z//;

    return $? ? '' : $out;
}

# a command as "nobody", its output appended to $log; its pid
sub _spawn {
    my ($self, $log, @cmd) = @_;

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDOUT, '>>', $log or die;
        open STDERR, '>&', \*STDOUT or die;
        $( = $) = "$self->{gid} $self->{gid}";
        $< = $> = $self->{uid};
        die "cannot become nobody" unless $> == $self->{uid};
        exec @cmd;
        exit 127;
    }

    return $pid;
}

sub _read {
    my ($file) = @_;
    open my $fh, '<', $file or return '';
    local $/;
    return <$fh> // '';
}

END {
    local $?;
    $_->stop() for @servers;
}

1;
