package Test::Siftpd;

# Test::Siftpd -- starts a siftpd of its own in a temporary directory on free
# loopback ports, drives it, stops it by its pid, and checks its error log
# for alerts and sanitizer reports (in the manner of nginx-tests).

use warnings;
use strict;

use Exporter qw/import/;
use File::Spec;
use File::Temp qw/tempdir/;
use IO::Socket::INET;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep time/;
use Test::More;

our @EXPORT_OK = qw/http_get http_raw port port_range children/;

my %ports;
my @port_locks;

# a sanitizer build must not fail a command for memory still held at exit
$ENV{ASAN_OPTIONS} //= 'detect_leaks=0';

sub new {
    my ($class) = @_;

    my $self = bless { _owner => $$ }, $class;

    $self->{_binary} = $ENV{TEST_SIFTPD_BINARY} || 'objs/siftpd';
    $self->{_binary} = File::Spec->rel2abs($self->{_binary});

    Test::More::BAIL_OUT("no siftpd binary at $self->{_binary}")
        unless -x $self->{_binary};

    $self->{_testdir} = tempdir('siftpd-test-XXXXXXXXXX', TMPDIR => 1,
        CLEANUP => !$ENV{TEST_SIFTPD_LEAVE});
    chmod 0755, $self->{_testdir};

    return $self;
}

sub testdir { $_[0]->{_testdir} }
sub binary { $_[0]->{_binary} }

# skip everything unless "siftpd -V" lists these modules
sub has {
    my ($self, @features) = @_;

    my $v = `$self->{_binary} -V 2>&1`;

    for my $f (@features) {
        Test::More::plan(skip_all => "no $f module")
            unless $v =~ /\bsft_${f}_module\b/;
    }

    return $self;
}

# a free TCP port on 127.0.0.1, held by a UDP socket on the same number so
# tests running in parallel do not pick it too
# below the kernel's ephemeral ports (net.ipv4.ip_local_port_range, 32768
# by default): a port picked there may be taken meanwhile by any outgoing
# connection's local end, which no lock of ours can keep off
use constant EPHEMERAL => do {
    my $lo = 32768;
    if (open(my $f, '<', '/proc/sys/net/ipv4/ip_local_port_range')) {
        $lo = $1 if (<$f> // '') =~ /^(\d+)/;
    }
    $lo > 25000 ? $lo : 32768;
};

sub port {
    my ($num) = @_;

    return $ports{$num} if defined $ports{$num};

    for (1 .. 500) {
        my $p = 20000 + int(rand(EPHEMERAL - 20000));
        next if grep { $_ == $p } values %ports;

        my $lock = _port_lock($p) or next;

        push @port_locks, $lock;
        $ports{$num} = $p;
        return $p;
    }

    die "no free port";
}

# $n free ports in a row, held as port() holds one: (first, last)
sub port_range {
    my ($n) = @_;

    for (1 .. 200) {
        my $lo = 20000 + int(rand(EPHEMERAL - 20000 - $n));
        my @locks = map { _port_lock($_) // () } $lo .. $lo + $n - 1;

        if (@locks == $n) {
            push @port_locks, @locks;
            return ($lo, $lo + $n - 1);
        }
    }

    die "no free port range";
}

# the UDP socket that holds port $p if it is free for TCP, or undef
sub _port_lock {
    my ($p) = @_;

    my $lock = IO::Socket::INET->new(Proto => 'udp',
        LocalAddr => "127.0.0.1:$p") or return undef;
    my $tcp = IO::Socket::INET->new(Proto => 'tcp',
        LocalAddr => "127.0.0.1:$p", Listen => 1, ReuseAddr => 1)
        or return undef;
    close $tcp;

    return $lock;
}

sub write_file {
    my ($self, $name, $content) = @_;

    my $path = "$self->{_testdir}/$name";
    open my $fh, '>', $path or die "can't create $path: $!";
    binmode $fh;
    print $fh $content;
    close $fh;

    return $path;
}

# "siftpd user add" with the password on stdin; options: home (default
# "/NAME"), perms, storage, conf (default siftpd.conf)
sub user_add {
    my ($self, $name, $password, %o) = @_;
    my $d = $self->{_testdir};

    open my $fh, '|-', $self->{_binary}, '-p', "$d/", '-c',
        "$d/" . ($o{conf} // 'siftpd.conf'), 'user', 'add', $name,
        '--home', $o{home} // "/$name",
        ($o{perms} ? ('--perms', $o{perms}) : ()),
        ($o{storage} ? ('--storage', $o{storage}) : ())
        or die "user add: $!";
    print $fh "$password\n";
    close $fh or die "user add $name failed";

    return $self;
}

# an ed25519 key pair (made once, "key" and "key.pub" in the test
# directory) given to the user in the users file; the private key's path
sub user_key {
    my ($self, $name) = @_;
    my $d = $self->{_testdir};

    unless (-f "$d/key") {
        system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0
            or die "ssh-keygen failed";
    }

    my $pub = $self->read_file('key.pub');
    chomp $pub;
    my $users = $self->read_file('users');
    $users =~ s/^\[\Q$name\E\]\n/[$name]\nssh_key = $pub\n/m
        or die "no user $name";
    $self->write_file('users', $users);

    return "$d/key";
}

# OpenSSH's sftp run on a batch as the user with the key of user_key,
# at most 60 s; its exit code and output
sub sftp_batch {
    my ($self, $port, $user, $batch) = @_;
    my $d = $self->{_testdir};

    $self->write_file("batch-$user", $batch);

    my $cmd = "timeout 60 sftp -b $d/batch-$user -P $port"
        . ' -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'
        . ' -o BatchMode=yes -o ConnectTimeout=10'
        . " -i $d/key $user\@127.0.0.1 2>&1";
    my $out = `$cmd`;

    return ($? >> 8, $out);
}

sub read_file {
    my ($self, $name) = @_;

    open my $fh, '<', "$self->{_testdir}/$name" or return '';
    local $/;
    my $content = <$fh>;
    close $fh;

    return $content;
}

sub test_globals {
    my ($self) = @_;
    my $d = $self->{_testdir};

    # the cheapest password hashes a login accepts: argon2id at the
    # default cost would take most of the suite's time
    return "daemon off;\npid $d/siftpd.pid;\nerror_log $d/error.log info;\n"
        . "password_hash_memory 19m;\npassword_hash_passes 2;\n";
}

sub expand {
    my ($self, $content) = @_;

    $content =~ s/%%TEST_GLOBALS%%/$self->test_globals()/ge;
    $content =~ s/%%TESTDIR%%/$self->{_testdir}/g;
    $content =~ s/%%PORT_(\d+)%%/port($1)/ge;

    return $content;
}

sub write_file_expand {
    my ($self, $name, $content) = @_;
    return $self->write_file($name, $self->expand($content));
}

sub sanitizer_env {
    my ($self) = @_;
    my $d = $self->{_testdir};

    $ENV{ASAN_OPTIONS} = "log_path=$d/sanitizer:detect_leaks=0";
    $ENV{UBSAN_OPTIONS} = "log_path=$d/sanitizer:print_stacktrace=1";
}

# "make install" of the build under test (TEST_SIFTPD_OBJS, default objs)
# with make variables (DESTDIR, PREFIX), not as a sub-make of "make test";
# returns (exit code, output)
sub make_install {
    my ($self, %vars) = @_;

    my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';
    local %ENV = %ENV;
    delete @ENV{qw/MAKEFLAGS MAKELEVEL MFLAGS/};

    my $out = `make -s -f $objs/Makefile install @{[
        map { "$_=$vars{$_}" } sort keys %vars ]} 2>&1`;

    return ($? >> 8, $out);
}

# runs siftpd with extra arguments; returns (exit code, output)
sub siftpd {
    my ($self, @args) = @_;

    $self->sanitizer_env();

    return _output($self->{_binary}, '-p', "$self->{_testdir}/", @args);
}

# starts siftpd on $conf and waits for its pid file; options: prefix
# (default the test directory; $conf and the pid file are under it),
# binary, pid (the pid file's name, default siftpd.pid)
sub run {
    my ($self, $conf, %o) = @_;

    $conf //= 'siftpd.conf';
    my $d = $o{prefix} // $self->{_testdir};
    my $pidfile = "$d/" . ($o{pid} // 'siftpd.pid');
    my $stderr = "$self->{_testdir}/stderr";

    unlink $pidfile;
    $self->sanitizer_env();

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDOUT, '>>', $stderr or die;
        open STDERR, '>>', $stderr or die;
        exec $o{binary} // $self->{_binary}, '-p', "$d/", '-c', "$d/$conf";
        exit 127;
    }

    $self->{_pid} = $pid;

    # a start takes milliseconds, but a loaded or emulated machine (the
    # kTLS guest) may take seconds: only a start that never comes fails
    my $end = time() + 60;

    while (time() < $end) {
        last if -s $pidfile;
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $self->{_pid};
            die "siftpd did not start:\n" . $self->read_file('stderr')
                . $self->read_file('error.log');
        }
        sleep 0.05;
    }

    die "siftpd did not write its pid file:\n" . $self->read_file('stderr')
        . $self->read_file('error.log') unless -s $pidfile;

    return $self;
}

sub pid { $_[0]->{_pid} }

# worker pids, from the process table: the children of our master, or of
# the master $pid (one a binary upgrade started), but its sweeper process
sub workers {
    my ($self, $master) = @_;
    my @w;

    $master //= $self->{_pid};
    return () unless $master;

    opendir my $dh, '/proc' or return ();
    for my $p (grep { /^\d+$/ } readdir $dh) {
        open my $fh, '<', "/proc/$p/stat" or next;
        my $stat = <$fh>;
        close $fh;
        next unless defined $stat;
        my ($ppid) = $stat =~ /^\d+ \(.*\) \S (\d+)/;
        next if $stat =~ /^\d+ \(siftpd: sweeper\)/;
        push @w, $p if defined $ppid && $ppid == $master;
    }
    closedir $dh;

    @w = sort { $a <=> $b } @w;
    return wantarray ? @w : scalar @w;
}

# every process whose parent is $ppid (a master's workers and sweeper)
sub children {
    my ($ppid) = @_;
    my @c;

    opendir my $dh, '/proc' or return ();
    for my $p (grep { /^\d+$/ } readdir $dh) {
        open my $fh, '<', "/proc/$p/stat" or next;
        my ($pp) = (<$fh> // '') =~ /^\d+ \(.*\) \S (\d+)/;
        close $fh;
        push @c, $p if defined $pp && $pp == $ppid;
    }
    closedir $dh;

    return @c;
}

# waits until a condition holds, at most $timeout seconds
sub wait_for {
    my ($self, $cond, $timeout) = @_;

    my $end = time() + ($timeout // 10);
    while (time() < $end) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return 0;
}

sub wait_log {
    my ($self, $re, $timeout) = @_;
    return $self->wait_for(sub { $self->read_file('error.log') =~ $re },
        $timeout);
}

# the pid in the pid file $name (default siftpd.pid), or 0
sub pidfile_pid {
    my ($self, $name) = @_;

    my ($pid) = $self->read_file($name // 'siftpd.pid') =~ /^(\d+)\n/;
    return $pid // 0;
}

# after USR2: waits until the pid file names a master other than $old and
# returns its pid (0 if none came); that master is stopped with ours
sub wait_new_master {
    my ($self, $old, $timeout) = @_;
    my $new = 0;

    $self->wait_for(sub {
        $new = $self->pidfile_pid();
        $new = 0 if $new == $old;
        return $new;
    }, $timeout // 60);

    push @{$self->{_adopted}}, $new if $new;
    return $new;
}

# the IPv4 TCP sockets: inode => [local port, remote port]
sub _tcp_sockets {
    my %s;

    open my $fh, '<', '/proc/net/tcp' or return {};
    while (my $l = <$fh>) {
        my @f = split ' ', $l;
        next unless @f > 9 && $f[1] =~ /:([0-9A-F]{4})$/;
        my $local = hex $1;
        next unless $f[2] =~ /:([0-9A-F]{4})$/;
        $s{$f[9]} = [$local, hex $1] if $f[9];
    }
    close $fh;

    return \%s;
}

# the socket inodes process $pid holds
sub _socket_inodes {
    my ($pid) = @_;
    my @i;

    opendir my $dh, "/proc/$pid/fd" or return ();
    for my $fd (grep { /^\d+$/ } readdir $dh) {
        my $l = readlink "/proc/$pid/fd/$fd" // '';
        push @i, $1 if $l =~ /^socket:\[(\d+)\]$/;
    }
    closedir $dh;

    return @i;
}

# of @pids, the one that holds the server side of a connection of the
# client $c: a socket of ours, or the pid of a client process (curl)
sub conn_owner {
    my ($self, $c, @pids) = @_;

    my $tcp = _tcp_sockets();
    my %server;

    my @client = ref $c ? ([$c->sockport(), $c->peerport()])
                        : map { $tcp->{$_} // () } _socket_inodes($c);

    for my $inode (keys %$tcp) {
        my ($l, $r) = @{$tcp->{$inode}};
        $server{$inode} = 1 if grep { $_->[1] == $l && $_->[0] == $r } @client;
    }

    for my $p (@pids) {
        return $p if grep { $server{$_} } _socket_inodes($p);
    }

    return undef;
}

sub reload {
    my ($self) = @_;
    kill 'HUP', $self->{_pid};
    return $self;
}

# a reload that succeeds, waited for until every worker of the
# configuration before has exited: until its signal arrives, an old worker
# may still take a connection and answer with what the new one replaced
sub reload_settled {
    my ($self, $timeout) = @_;
    my %old = map { $_ => 1 } $self->workers();

    $self->reload();

    return $self->wait_for(sub {
        my @w = $self->workers();
        @w && !grep { $old{$_} } @w;
    }, $timeout // 20);
}

# a master that is not our child (a binary upgrade started it): QUIT, then
# KILL with its workers if it is still there after 20 s
sub _stop_adopted {
    my ($self) = @_;

    while (my $pid = shift @{$self->{_adopted} // []}) {
        next unless kill 0, $pid;
        kill 'QUIT', $pid;
        next if $self->wait_for(sub { !kill 0, $pid }, 20);
        kill 'KILL', $self->workers($pid), $pid;
        Test::More::fail("master $pid stopped on QUIT");
    }
}

sub stop {
    my ($self) = @_;

    $self->_stop_adopted();

    my $pid = delete $self->{_pid};
    return $self unless $pid;

    kill 'QUIT', $pid;

    my $end = time() + 20;
    while (time() < $end) {
        return $self->_stopped() if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }

    kill 'TERM', $pid;
    $end = time() + 10;
    while (time() < $end) {
        return $self->_stopped() if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }

    kill 'KILL', $pid;
    waitpid($pid, 0);
    Test::More::fail('siftpd stopped on QUIT');

    return $self;
}

sub _stopped { $_[0] }

# the closing checks: no alerts, no sanitizer reports
# stops the server, then checks its log has no alert and the sanitizers
# reported nothing; the checks' names begin with $who ("node A: ")
sub stop_checked {
    my ($self, $who) = @_;

    $who //= '';
    $self->stop();

    my $log = $self->read_file('error.log');
    my @alerts = grep { /\[alert\]/ } split /\n/, $log;
    Test::More::is(join("\n", @alerts), '', "${who}no alerts");

    my $san = '';
    opendir my $dh, $self->{_testdir};
    for my $f (grep { /^sanitizer/ } readdir $dh) {
        $san .= $self->read_file($f);
    }
    closedir $dh;
    $san .= join "\n", grep { /runtime error:|Sanitizer/ }
        split /\n/, $self->read_file('stderr');
    Test::More::is($san, '', "${who}no sanitizer errors");

    if ($ENV{TEST_SIFTPD_CATLOG}) {
        Test::More::diag($log);
    }
}

sub done {
    my ($self) = @_;

    $self->stop_checked();
    Test::More::done_testing();
}

sub DESTROY {
    my ($self) = @_;

    # a forked test helper must not stop the server it inherited
    return unless $self->{_owner} == $$;

    for my $pid (@{$self->{_adopted} // []}) {
        kill 'KILL', $self->workers($pid), $pid if kill 0, $pid;
    }

    if (my $pid = delete $self->{_pid}) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }
}

# runs the python3 script NAME of the test directory with arguments: each
# line it prints as "ok WHAT" or "not ok WHAT: WHY" is a test; returns the
# number of them and the whole output
sub python_checks {
    my ($self, $name, @args) = @_;

    my (undef, $out) = _output('timeout', 90, '/usr/bin/python3',
        "$self->{_testdir}/$name", @args);
    my $n = 0;

    for my $l (split /\n/, $out) {
        if ($l =~ /^(not )?ok (.*)$/) {
            Test::More::ok(!$1, $2);
            $n++;
        }
    }

    return ($n, $out);
}

# one FTP session on port as user (password "pw"): each command sent as
# it is, and a line "COMMAND CODE" for its reply
sub ftp_commands {
    my ($self, $port, $user, @commands) = @_;

    return $self->_ftp_session(30, 'code', $port, $user, @commands);
}

# the same with the whole reply: "COMMAND REPLY", within a limit of
# seconds for commands that take long (renames on S3)
sub ftp_replies {
    my ($self, $limit, $port, $user, @commands) = @_;

    return $self->_ftp_session($limit, 'whole', $port, $user, @commands);
}

sub _ftp_session {
    my ($self, $limit, $what, $port, $user, @commands) = @_;

    $self->write_file('ftp_commands.py', <<'PY');
import ftplib, sys
limit, what = int(sys.argv[1]), sys.argv[2]
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[3]), timeout=limit)
f.login(sys.argv[4], 'pw')
for c in sys.argv[5:]:
    try:
        r = f.sendcmd(c)
    except ftplib.all_errors as e:
        r = str(e)
    print(c, r[:3] if what == 'code' else r)
f.quit()
PY

    my (undef, $out) = _output('timeout', $limit * 2, 'python3',
        "$self->{_testdir}/ftp_commands.py", int($limit / 2), $what, $port,
        $user, @commands);

    return $out;
}

# one FTP login on port with ftplib: "ok", or the reply code to the login
sub ftp_login {
    my ($self, $port, $user, $pass) = @_;

    $self->write_file('ftp_login.py', <<'PY');
import ftplib, sys
try:
    f = ftplib.FTP()
    f.connect('127.0.0.1', int(sys.argv[1]), timeout=15)
    f.login(sys.argv[2], sys.argv[3])
    print('ok')
    f.quit()
except ftplib.error_perm as e:
    print(str(e).split()[0])
PY

    my (undef, $out) = _output('timeout', 30, 'python3',
        "$self->{_testdir}/ftp_login.py", $port, $user, $pass);
    chomp $out;

    return $out;
}

# runs a command without a shell: its exit code, its output and errors
sub _output {
    my (@command) = @_;

    my $pid = open(my $fh, '-|');
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT;
        exec @command;
        exit 127;
    }

    local $/;
    my $out = <$fh>;
    close $fh;

    return ($? >> 8, $out // '');
}

# a minimal HTTP client: one request, returns the whole response
sub http_raw {
    my ($port, $request, %opts) = @_;

    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        Proto => 'tcp', Timeout => 5) or return undef;

    $s->print($request);
    $s->shutdown(1) if $opts{shutdown};

    my $reply = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm($opts{timeout} // 5);
        while (1) {
            my $n = $s->sysread(my $buf, 65536);
            last unless $n;
            $reply .= $buf;
            last if $opts{until} && $reply =~ $opts{until};
        }
        alarm(0);
    };
    alarm(0);

    return $reply;
}

sub http_get {
    my ($port, $path) = @_;
    return http_raw($port,
        "GET $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
}

1;
