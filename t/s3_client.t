#!/usr/bin/perl

# s3_client.t -- the S3 client layer against moto (moto_server on a free
# 127.0.0.1 port) and t/s3_standin.py (503 twice, then 200; IMDSv2; STS):
# runs t/unit/test_s3_client.c and t/unit/test_s3_sts.c, built by "make
# unit-tests", and reports each of their results; both servers are
# stopped by pid.

use warnings;
use strict;

use Test::More;

use lib 't/lib';
use Test::Siftpd::S3 qw/s3_servers s3_run s3_clean/;

my $objs = $ENV{TEST_SIFTPD_OBJS} // 'objs';
my @progs = ("$objs/t/test_s3_client", "$objs/t/test_s3_sts");

plan(skip_all => "no $progs[1] (make unit-tests; --without-s3_module?)")
    unless -x $progs[1];

my ($dir, $moto, $flaky) = s3_servers($progs[0], sub { () });

$ENV{S3_TEST_ENDPOINT} = "http://127.0.0.1:$moto";
$ENV{S3_TEST_FLAKY} = "http://127.0.0.1:$flaky";

for my $prog (@progs) {
    s3_run($prog, $dir);
}
s3_clean($dir);

done_testing();
