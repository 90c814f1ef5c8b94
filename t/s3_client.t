#!/usr/bin/perl

# s3_client.t -- the S3 client layer against moto (moto_server on a free
# 127.0.0.1 port) and t/s3_standin.py (503 twice, then 200; IMDSv2; STS):
# runs t/unit/test_s3_client.c and t/unit/test_s3_sts.c, built by "make
# unit-tests", and reports each of their results; both servers are
# stopped by pid.

use warnings;
use strict;

use Test::More;
use File::Temp qw/tempdir/;
use IO::Socket::INET;

use lib 't/lib';
use Test::Siftpd;

my $objs = $ENV{TEST_SIFTPD_OBJS} // 'objs';
my @progs = ("$objs/t/test_s3_client", "$objs/t/test_s3_sts");

for my $prog (@progs) {
    plan(skip_all => "no $prog (make unit-tests; --without-s3_module?)")
        unless -x $prog;
}
plan(skip_all => 'no moto_server (auto/deps --test)')
    unless grep { -x "$_/moto_server" } split(/:/, $ENV{PATH});

my $dir = tempdir('siftpd-test-s3-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $moto_port = Test::Siftpd::port(9000);
my $flaky_port = Test::Siftpd::port(9001);
my @pids;

sub start {
    my ($log, @cmd) = @_;

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

start('moto.log', 'moto_server', '-H', '127.0.0.1', '-p', $moto_port);
start('standin.log', 'python3', 't/s3_standin.py', $flaky_port);

plan(skip_all => 'moto_server did not start') unless listening($moto_port);
plan(skip_all => 'the stand-in did not start') unless listening($flaky_port);

$ENV{S3_TEST_ENDPOINT} = "http://127.0.0.1:$moto_port";
$ENV{S3_TEST_FLAKY} = "http://127.0.0.1:$flaky_port";
$ENV{ASAN_OPTIONS} = "log_path=$dir/sanitizer:detect_leaks=1";
$ENV{UBSAN_OPTIONS} = "log_path=$dir/sanitizer:print_stacktrace=1";

for my $prog (@progs) {
    my $out = `$prog 2>$dir/stderr`;
    my $status = $?;
    my ($planned, $ran) = (undef, 0);

    for (split(/\n/, $out)) {
        if (/^1\.\.(\d+)/) {
            $planned = $1;
        } elsif (/^(not )?ok \d+ - (.*)$/) {
            ok(!defined $1, $2);
            $ran++;
        }
    }

    ok($planned && $planned > 20 && $ran == $planned,
       "$prog ran its plan");
    is($status, 0, "$prog exited 0");
}

opendir(my $dh, $dir) or die;
my @san = grep { /^sanitizer/ } readdir $dh;
is("@san", '', 'no sanitizer reports');

done_testing();
