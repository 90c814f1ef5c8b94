package Test::Siftpd::S3;

# Test::Siftpd::S3 -- what the S3 tests share: moto_server and
# t/s3_standin.py started on free 127.0.0.1 ports (skipping when moto is
# not installed or does not start), a C test program run with their
# addresses and its TAP results reported; t/s3_storage.py's in-process
# moto for the driver's tests, with a credentials file; the stand-in in
# front of it or alone for a test of siftpd; and every server stopped by
# pid at the end.

use warnings;
use strict;

use Exporter qw/import/;
use File::Temp qw/tempdir/;
use IO::Socket::INET;
use Test::More;

use Test::Siftpd;

our @EXPORT_OK = qw/s3_servers s3_run s3_clean s3_storage_moto s3_standin/;

my @pids;


sub start {
    my ($dir, $log, @cmd) = @_;

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open(STDOUT, '>', "$dir/$log") or die;
        open(STDERR, '>&', \*STDOUT) or die;
        exec(@cmd) or die "exec $cmd[0]: $!";
    }

    push @pids, $pid;
}

sub listening {
    my ($port) = @_;

    for (1 .. 300) {
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port");
        return 1 if $s;
        select(undef, undef, undef, 0.1);
    }

    return 0;
}

END {
    local $?;

    for my $pid (@pids) {
        kill('TERM', $pid);
        waitpid($pid, 0);
    }
}


# skips unless the program and moto are there; starts moto, then the
# stand-in with its own port and the extra arguments the callback gives
# from moto's port; returns the directory and both ports
sub s3_servers {
    my ($prog, $standin_args) = @_;

    plan(skip_all => "no $prog (make unit-tests; --without-s3_module?)")
        unless -x $prog;
    plan(skip_all => 'no moto_server (auto/deps --test)')
        unless grep { -x "$_/moto_server" } split(/:/, $ENV{PATH});

    my $dir = tempdir('siftpd-test-s3-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $moto = Test::Siftpd::port(9000);
    my $standin = Test::Siftpd::port(9001);

    start($dir, 'moto.log', 'moto_server', '-H', '127.0.0.1', '-p', $moto);
    start($dir, 'standin.log', 'python3', 't/s3_standin.py', $standin,
          $standin_args->($moto));

    plan(skip_all => 'moto_server did not start') unless listening($moto);
    plan(skip_all => 'the stand-in did not start') unless listening($standin);

    $ENV{ASAN_OPTIONS} = "log_path=$dir/sanitizer:detect_leaks=1";
    $ENV{UBSAN_OPTIONS} = "log_path=$dir/sanitizer:print_stacktrace=1";

    return ($dir, $moto, $standin);
}

# runs the program, reports each of its results and that it ran its plan
# and exited 0; returns its other output lines
sub s3_run {
    my ($prog, $dir) = @_;

    my $out = `$prog 2>$dir/stderr`;
    my $status = $?;
    my ($planned, $ran, @rest) = (undef, 0);

    for (split(/\n/, $out)) {
        if (/^1\.\.(\d+)/) {
            $planned = $1;
        } elsif (/^(not )?ok \d+ - (.*)$/) {
            ok(!defined $1, $2);
            $ran++;
        } else {
            push @rest, $_;
        }
    }

    ok($planned && $planned > 20 && $ran == $planned,
       "$prog ran its plan");
    is($status, 0, "$prog exited 0");

    return @rest;
}

# skips unless moto and paramiko are there; starts t/s3_storage.py in the
# test's directory with the ports and the extra arguments (its output in
# s3.log), waits for it, and writes the credentials file "creds"
sub s3_storage_moto {
    my ($t, @args) = @_;
    my $d = $t->testdir();

    plan(skip_all => 'no moto_server (auto/deps --test)')
        unless grep { -x "$_/moto_server" } split(/:/, $ENV{PATH});
    plan(skip_all => 'no moto module for python3')
        unless system('python3 -c "import moto.server" 2>/dev/null') == 0;
    plan(skip_all => 'no paramiko')
        unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null')
               == 0;

    start($d, 's3.log', 'python3', 't/s3_storage.py', @args);

    $t->wait_for(sub { $t->read_file('s3.log') =~ /^ready/m }, 120)
        or BAIL_OUT("moto did not start:\n" . $t->read_file('s3.log'));

    $t->write_file('creds', "[default]\naws_access_key_id = test\n"
        . "aws_secret_access_key = testsecret\n");
    chmod 0600, "$d/creds";
}

# t/s3_standin.py on port in the test's directory (its output in
# standin-PORT.log): a proxy to the upstream port (the request log at
# GET /__log), or alone (STS, IMDS) without one; waits until it listens
sub s3_standin {
    my ($t, $port, @upstream) = @_;

    start($t->testdir(), "standin-$port.log", 'python3', 't/s3_standin.py',
          $port, @upstream);

    listening($port) or BAIL_OUT('the S3 stand-in did not start');
}

# no report from the sanitizers in the directory
sub s3_clean {
    my ($dir) = @_;

    opendir(my $dh, $dir) or die;
    my @san = grep { /^sanitizer/ } readdir $dh;
    is("@san", '', 'no sanitizer reports');
}

1;
