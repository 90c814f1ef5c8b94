#!/usr/bin/perl

# s3_upload.t -- the S3 upload object against moto (moto_server on a free
# 127.0.0.1 port) and t/s3_standin.py as a proxy in front of it that fails
# UploadPart twice per "flaky" key and logs what it forwards: runs
# t/unit/test_s3_upload.c, built by "make unit-tests", reports each of its
# results, and checks the CRC-32C it printed for two objects against one
# computed here from the bytes moto served; both servers stopped by pid.

use warnings;
use strict;

use Test::More;

use lib 't/lib';
use Test::Siftpd::S3 qw/s3_servers s3_run s3_clean/;

my $objs = $ENV{TEST_SIFTPD_OBJS} // 'objs';
my $prog = "$objs/t/test_s3_upload";

my ($dir, $moto, $proxy) = s3_servers($prog, sub { ($_[0]) });

$ENV{S3_TEST_ENDPOINT} = "http://127.0.0.1:$moto";
$ENV{S3_TEST_PROXY} = "http://127.0.0.1:$proxy";
$ENV{S3_TEST_DIR} = $dir;

my %crc = map { /^# crc32c (\S+) ([0-9a-f]{8})$/ ? ($1 => $2) : () }
          s3_run($prog, $dir);

# CRC-32C (Castagnoli, reflected 0x82f63b78) by a table

my @table = map {
    my $c = $_;
    $c = ($c & 1) ? ($c >> 1) ^ 0x82f63b78 : $c >> 1 for 1 .. 8;
    $c;
} 0 .. 255;

sub crc32c {
    my ($data) = @_;
    my $crc = 0xffffffff;

    $crc = $table[($crc ^ $_) & 0xff] ^ ($crc >> 8) for unpack('C*', $data);

    return sprintf('%08x', $crc ^ 0xffffffff);
}

for my $key (qw/small three/) {
    open(my $fh, '<:raw', "$dir/$key") or die "$dir/$key: $!";
    local $/;
    my $data = <$fh>;
    close($fh);
    ok(length($data) > 0 && ($crc{$key} // '') eq crc32c($data),
       "$key: the CRC-32C it kept is the bytes'");
}

s3_clean($dir);

done_testing();
