#!/usr/bin/perl

# s3_nodes.t -- two siftpd nodes on one bucket: two servers of their own
# (each with its directory, users and ports) on the same moto bucket and
# prefix.  A file uploaded through node A by FTP is at once listed and
# downloaded byte-identical through node B by SFTP, a directory made on B
# is listed on A, and a delete on B is seen on A (gone from its listing,
# its download refused).  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::S3 qw/s3_proxied s3_object/;

my $na = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $nb = Test::Siftpd->new();
my $da = $na->testdir();
my $db = $nb->testdir();

my ($moto) = s3_proxied($na);

my $conf = <<"EOF";
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage cloud {
    driver s3;
    s3_endpoint http://127.0.0.1:$moto;
    s3_bucket files;
    s3_prefix nodes/;
    s3_credentials file $da/creds;
    s3_part_size 5m;
}
EOF

$na->write_file_expand('siftpd.conf', $conf
    . "ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage cloud; } }\n");
$nb->write_file_expand('siftpd.conf', $conf
    . "sftp { server { listen 127.0.0.1:%%PORT_8022%%;\n"
    . "    host_key %%TESTDIR%%/host_key; storage cloud; } }\n");

$na->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$nb->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$nb->user_key('bob');

$na->run();
$nb->run();

my $ftp = port(8021);
my $sftp = port(8022);

system("head -c 7340035 /dev/urandom > $da/seven");
$na->write_file('note', "a note\n");

my $curl = "curl -sS --max-time 60 ftp://bob:pw\@127.0.0.1:$ftp";

# up through A by FTP, at once listed and down through B by SFTP

my $out = `$curl/ -T $da/seven 2>&1` . `$curl/ -T $da/note 2>&1`;
is($? >> 8, 0, 'node A: FTP uploads') or diag($out);

my $rc;
($rc, $out) = $nb->sftp_batch($sftp, 'bob',
    "ls -l\nget seven $db/seven\nget note $db/note\nmkdir fromb\n");
is($rc, 0, 'node B: the SFTP batch ran') or diag($out);
like($out, qr/^-\S+\s.*\s7340035 .* seven$/m,
    'node B lists what A took, with its size');
ok(system('cmp', '-s', "$da/seven", "$db/seven") == 0
    && system('cmp', '-s', "$da/note", "$db/note") == 0,
    'node B serves it byte-identical');

my $list = `$curl/ -l 2>&1`;
is(join(' ', sort split /\r?\n/, $list), 'fromb note seven',
    'node A lists the directory B made');

# a delete on B, seen on A

($rc, $out) = $nb->sftp_batch($sftp, 'bob', "rm seven\nrmdir fromb\n");
is($rc, 0, 'node B: rm and rmdir') or diag($out);

$list = `$curl/ -l 2>&1`;
is(join(' ', sort split /\r?\n/, $list), 'note',
    'node A no longer lists what B removed');
$out = `$curl/seven -o $da/gone 2>&1`;
ok($? && $out =~ /550|not exist/i, 'node A refuses the removed file')
    or diag($out);
ok(!defined s3_object($moto, 'nodes/bob/seven'), 'gone from the bucket');

# both nodes stopped; A's log checked here, B's by done()

$na->stop_checked('node A: ');

$nb->done();
