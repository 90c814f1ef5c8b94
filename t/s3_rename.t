#!/usr/bin/perl

# s3_rename.t -- renames of directories and large objects in the s3
# storage driver, against moto (t/s3_storage.py) and, for one storage,
# t/s3_standin.py as a proxy in front of it that fails every copy to a
# key with "broken" in it.  A tree of files and subdirectories (markers
# and not) moved byte-identical by FTP RNFR/RNTO and by SFTP rename, the
# old keys gone; a new name that exists refused, nothing changed; a
# directory over s3_rename_max_objects refused by FTP (550 with the
# reason) and by SFTP (the message) before anything changes; a copy that
# fails leaving the source whole and no copy behind; a 20 MiB file moved
# by a multipart copy under s3_copy_threshold 5m (its ETag counts four
# parts); siftpd -t refusing a threshold under 5 MiB.  Every process is
# stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use Digest::MD5 ();
use Test::Siftpd::S3 qw/s3_storage s3_storage_moto s3_put_bytes s3_keys s3_head
    s3_object s3_ftp_sftp/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
my $standin = port(8902);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');

Test::Siftpd::S3::start($d, 'standin.log', 'python3', 't/s3_standin.py',
    $standin, $s3);
plan(skip_all => 'the stand-in did not start')
    unless Test::Siftpd::S3::listening($standin);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $s3, 's3_part_size 5m', 's3_copy_threshold 5m', 's3_retries 1', 's3_timeout 30s') ]}
@{[ s3_storage('tight', $s3, 's3_rename_max_objects 3') ]}
@{[ s3_storage('faulty', $standin, 's3_retries 0') ]}
@{[ s3_ftp_sftp('cloud') ]}
EOF

# siftpd -t: a threshold below S3's smallest part

{
    my $conf = $t->read_file('siftpd.conf');
    (my $bad = $conf) =~ s/s3_copy_threshold 5m;/s3_copy_threshold 1m;/;
    $t->write_file('bad.conf', $bad);
    my $line = 1 + (() = substr($bad, 0, index($bad, 's3_copy_threshold'))
        =~ /\n/g);
    my (undef, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
    like($msg, qr/\Q$d\E\/bad\.conf:$line: .*"1m" is not from 5242880 to 5368709120/,
        'siftpd -t refuses s3_copy_threshold 1m with file:line');
    my ($rc) = $t->siftpd('-t', '-c', "$d/siftpd.conf");
    is($rc, 0, 'siftpd -t takes s3_copy_threshold 5m');
}

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('tim', 'pw', perms => 'all', storage => 'tight');
$t->user_add('mal', 'pw', perms => 'all', storage => 'faulty');
my $key = $t->user_key('bob');
$t->user_key('tim');

# what moto holds, put and read through its API, not through siftpd

sub s3 {
    my ($what, $key, @arg) = @_;

    return s3_put_bytes($s3, "srv/$key", @arg) if $what eq 'put';
    return s3_head($s3, "srv/$key")->{etag} if $what eq 'etag';
    die "s3 $what?";
}

# every key below the prefix, its size, its md5, a line each
sub tree {
    my ($prefix) = @_;
    my %keys = s3_keys($s3, "srv/$prefix");

    return join('', sort map {
        my $body = s3_object($s3, $_);
        substr($_, length("srv/$prefix")) . ' ' . length($body) . ' '
            . Digest::MD5::md5_hex($body) . "\n";
    } keys %keys);
}

my $ftp = port(8021);
my $sftp = port(8022);

# FTP commands with the whole reply

sub ftp {
    my ($user, @cmds) = @_;
    return $t->ftp_replies(300, $ftp, $user, @cmds);
}

# the tree: markers, files of a few sizes, a subdirectory without one

s3('put', 'bob/tree/', 0, 0);
s3('put', 'bob/tree/a', 5000, 1);
s3('put', 'bob/tree/sub/', 0, 0);
s3('put', 'bob/tree/sub/b', 6 * 1024 * 1024, 2);
s3('put', 'bob/tree/sub/deeper/c', 3, 3);
s3('put', 'bob/tree/z', 0, 4);
s3('put', 'bob/existing/', 0, 0);

my $before = tree('bob/tree/');
like($before, qr/^sub\/b 6291456 /m, 'the tree is in the bucket');
is(scalar(() = $before =~ /\n/g), 6, 'the tree has six keys');

$t->run();

# FTP: the whole tree under the new name, byte-identical, the old gone

my $out = ftp('bob', 'RNFR tree', 'RNTO moved');
like($out, qr/^RNTO moved 250 /m, 'FTP rename of a directory: 250')
    or diag($out);
is(tree('bob/moved/'), $before, 'FTP rename: every key moved, identical');
is(tree('bob/tree/'), '', 'FTP rename: no key left under the old name');

# SFTP rename (OpenSSH sftp), and onto a name that exists

my ($rc, $sout) = $t->sftp_batch($sftp, 'bob', "rename moved moved2\n");
is($rc, 0, 'SFTP rename of a directory ran') or diag($sout);
is(tree('bob/moved2/'), $before, 'SFTP rename: every key moved, identical');
is(tree('bob/moved/'), '', 'SFTP rename: no key left under the old name');

$out = ftp('bob', 'RNFR moved2', 'RNTO existing', 'RNFR moved2',
    'RNTO moved2/sub/in');
like($out, qr/^RNTO existing 550 /m,
    'a directory onto an existing directory: 550') or diag($out);
like($out, qr/^RNTO moved2\/sub\/in 5\d\d /m,
    'a directory into itself: refused') or diag($out);
is(tree('bob/moved2/'), $before, 'refused renames: the tree unchanged');
is(tree('bob/existing/'), " 0 d41d8cd98f00b204e9800998ecf8427e\n",
    'refused renames: the existing directory unchanged');

# the limit: more than s3_rename_max_objects, refused before a change

s3('put', "tim/big/$_", 1, 5) for qw/one two three four/;
my $tim = tree('tim/big/');

$out = ftp('tim', 'RNFR big', 'RNTO big2');
like($out, qr/^RNTO big2 550 Renaming a directory of more than 3 objects is not supported\.$/m,
    'over s3_rename_max_objects: FTP 550 with the reason') or diag($out);
ok($t->wait_log(qr/"srv\/tim\/big\/" is not renamed: it holds more than 3 objects \(s3_rename_max_objects\)/),
    'over s3_rename_max_objects: the line names the limit');

$t->write_file('limit.py', <<'PY');
import paramiko, sys
sys.path.insert(0, sys.argv[3])
import sftp_raw

t = sftp_raw.login(int(sys.argv[1]), sys.argv[2], 'tim')
s = paramiko.SFTPClient.from_transport(t)
try:
    s.rename('big', 'big3')
    sftp_raw.check('SFTP rename over the limit refused', False)
except IOError as e:
    sftp_raw.check('SFTP rename over the limit refused with the reason: '
                   + str(e), 'more than 3 objects' in str(e))
s.close()
t.close()
PY
my ($c, $pyout) = $t->python_checks('limit.py', $sftp, $key,
    Cwd::getcwd() . '/t/lib');
ok($c == 1, 'the SFTP limit check ran') or diag($pyout);
is(tree('tim/big/'), $tim, 'over the limit: the directory unchanged');
is(tree('tim/big2/') . tree('tim/big3/'), '', 'over the limit: no copy');

# a copy that fails: the copies made deleted, the source whole

s3('put', "mal/d/$_", 1000, 6) for qw/x y broken z/;
s3('put', 'mal/d/', 0, 0);
my $mal = tree('mal/d/');

$out = ftp('mal', 'RNFR d', 'RNTO e');
like($out, qr/^RNTO e 451 /m, 'a copy that fails: 451') or diag($out);
ok($t->wait_log(qr/"srv\/mal\/d\/" is not renamed: a copy failed, the copies made were deleted(?! but)/),
    'a copy that fails: its line');
is(tree('mal/d/'), $mal, 'a copy that fails: the source whole');
is(tree('mal/e/'), '', 'a copy that fails: no copy left');

# a file above s3_copy_threshold: a multipart copy of four parts

s3('put', 'bob/twenty', 20 * 1024 * 1024, 7);
my $twenty = tree('bob/twenty');

$out = ftp('bob', 'RNFR twenty', 'RNTO twenty2');
like($out, qr/^RNTO twenty2 250 /m, 'a 20 MiB file renamed: 250')
    or diag($out);
is(tree('bob/twenty2'), $twenty, 'a 20 MiB file renamed: identical');
is(tree('bob/twenty'), "2$twenty",
    'a 20 MiB file renamed: the old key gone');
like(s3('etag', 'bob/twenty2'), qr/-4"$/,
    'a 20 MiB file renamed: by a multipart copy of four parts');

$t->done();
