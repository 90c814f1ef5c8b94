package Test::Siftpd::S3;

# Test::Siftpd::S3 -- what the S3 tests share: moto_server and
# t/s3_standin.py started on free 127.0.0.1 ports (skipping when moto is
# not installed or does not start), a C test program run with their
# addresses and its TAP results reported; t/s3_storage.py's in-process
# moto for the driver's tests, with a credentials file, an object of its
# bucket read through moto's API, and reproducible bytes to upload; and
# every server stopped by pid at the end.

use warnings;
use strict;

use Exporter qw/import/;
use File::Temp qw/tempdir/;
use IO::Socket::INET;
use Test::More;

use Test::Siftpd;

our @EXPORT_OK = qw/s3_servers s3_run s3_clean s3_storage_moto s3_object
    s3_bytes/;

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

# the bytes of KEY in the bucket "files" of moto on PORT, read through
# moto's API (boto3), not through siftpd; "status N" when it answers N
sub s3_object {
    my ($t, $port, $key) = @_;
    my $d = $t->testdir();

    $t->write_file('s3_object.py', <<'PY');
import boto3, botocore, sys
c = boto3.client('s3', endpoint_url='http://127.0.0.1:' + sys.argv[1],
                 aws_access_key_id='test', aws_secret_access_key='testsecret',
                 region_name='us-east-1')
try:
    body = c.get_object(Bucket='files', Key=sys.argv[2])['Body']
    open(sys.argv[3], 'wb').write(body.read())
    print('200')
except botocore.exceptions.ClientError as e:
    print(e.response['ResponseMetadata']['HTTPStatusCode'])
PY

    unlink("$d/s3_object.got");
    my $st = `timeout 60 python3 $d/s3_object.py $port '$key' $d/s3_object.got`;
    return $st =~ /^200/ ? $t->read_file('s3_object.got') : "status $st";
}

# N bytes that SEED always makes alike
sub s3_bytes {
    my ($seed, $n) = @_;
    srand($seed);
    return substr(pack('N*', map { int(rand(4294967296)) } 0 .. $n / 4),
        0, $n);
}

# no report from the sanitizers in the directory
sub s3_clean {
    my ($dir) = @_;

    opendir(my $dh, $dir) or die;
    my @san = grep { /^sanitizer/ } readdir $dh;
    is("@san", '', 'no sanitizer reports');
}

1;
