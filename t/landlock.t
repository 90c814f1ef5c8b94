#!/usr/bin/perl

# landlock.t -- "landlock on" (the default): a worker cannot open a file
# that no module declared, even with open(2) straight past the storage
# layer (the hello module's "hello_probe_path", tried on the worker's own
# thread and on a thread of its pool), while FTP and SFTP uploads,
# downloads, renames across directories and deletes, a users file
# replaced by "siftpd user add", and a log reopen after the logs were
# moved away all work; with "landlock off" the same file opens.

use warnings;
use strict;

use lib 't/lib';
use File::Spec;
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_login ftp_cmd ftp_passive/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp http/);
my $d = $t->testdir();
my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';
my $hello = File::Spec->rel2abs("$objs/modules/sft_hello_module.so");

plan(skip_all => "no $hello (configure --add-dynamic-module=modules/hello)")
    unless -f $hello;
plan(skip_all => 'no OpenSSH client') unless -x '/usr/bin/sftp';

# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION), the
# same number on x86_64 and aarch64; renames across directories need 2
my $abi = syscall(444, 0, 0, 1);
plan(skip_all => 'no Landlock ABI 2 in this kernel') unless $abi >= 2;

plan(tests => 23);

# the users file has a directory of its own (the workers may read there),
# the logs are in the test directory and logs/ (they may write there);
# outside/secret is in neither's reach for reading

mkdir "$d/$_" for qw/conf logs data data\/alice outside/;
$t->write_file('outside/secret', "secret\n");
my $secret = "$d/outside/secret";

sub conf {
    my ($extra) = @_;

    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
load_module $hello;
$extra
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/conf/users;
transfer_log %%TESTDIR%%/logs/xferlog;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
http {
    hello_probe_path %%TESTDIR%%/outside/secret;
    server { listen 127.0.0.1:%%PORT_8080%%; }
}
EOF
}

sub probes {
    my ($what) = @_;
    return $t->wait_log(qr/open\("\Q$secret\E"\) in the worker $what/)
        && $t->wait_log(qr/open\("\Q$secret\E"\) in a pool thread $what/);
}

conf('');
$t->user_add('alice', 'pw', perms =>
    'list,download,upload,overwrite,delete,rename,mkdir,rmdir');

system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0 or die;
my $key = "$d/key";
my $pub = $t->read_file('key.pub');
chomp $pub;
my $users = $t->read_file('conf/users');
$users =~ s/^\[alice\]\n/[alice]\nssh_key = $pub\n/m or die;
$t->write_file('conf/users', $users);

$t->run();

ok($t->wait_log(qr/landlock: confined to \d+ paths, ABI \d+/),
    'the worker says it is confined');
ok(probes('failed \(13: '),
    'open(2) outside the declared paths: EACCES on the worker and its pool');

# FTP: upload, download, a directory, a rename into it, deletes

my $ftp = port(8021);
my $s = ftp_login($ftp, 'alice', 'pw');
ftp_cmd($s, 'TYPE I');

is(ftp_passive($s, 'STOR up.txt', "ftp data\n"), '', 'FTP upload');
is(ftp_passive($s, 'RETR up.txt'), "ftp data\n", 'FTP download');
like(ftp_cmd($s, 'MKD sub'), qr/^257 /, 'FTP MKD');
like(ftp_cmd($s, 'RNFR up.txt'), qr/^350 /, 'FTP RNFR');
like(ftp_cmd($s, 'RNTO sub/moved.txt'), qr/^250 /,
    'FTP rename into another directory');
like(ftp_cmd($s, 'DELE sub/moved.txt'), qr/^250 /, 'FTP DELE');
like(ftp_cmd($s, 'RMD sub'), qr/^250 /, 'FTP RMD');
ftp_cmd($s, 'QUIT');
close $s;

# SFTP: the same through the OpenSSH client

$t->write_file('local.txt', "sftp data\n");
$t->write_file('batch', <<"EOF");
put $d/local.txt s.txt
mkdir sdir
rename s.txt sdir/s2.txt
get sdir/s2.txt $d/got.txt
rm sdir/s2.txt
rmdir sdir
EOF

my $out = `sftp -b $d/batch -i $key -P ${\ port(8022)} -o BatchMode=yes \\
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \\
    -o ConnectTimeout=10 alice\@127.0.0.1 2>&1`;
is($? >> 8, 0, 'SFTP put, mkdir, rename, get, rm, rmdir') or diag($out);
is($t->read_file('got.txt'), "sftp data\n", 'SFTP download');
ok(!-e "$d/data/alice/sdir", 'SFTP removed the directory');

# "siftpd user add" renames a new users file over the old one: the
# worker reads the new file through the directory

my $added = time;
select(undef, undef, undef, 0.05) while time == $added;
mkdir "$d/data/bob";
$t->user_add('bob', 'pw2', perms => 'list');
my $b = eval { ftp_login($ftp, 'bob', 'pw2') };
ok($b, 'a user added after the start logs in');
close $b if $b;

# logs moved away and reopened: the worker writes the new ones

rename "$d/error.log", "$d/error.log.1" or die;
rename "$d/logs/xferlog", "$d/logs/xferlog.1" or die;
my ($rc) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'reopen');
is($rc, 0, 'siftpd -s reopen');

ok($t->wait_for(sub {
    my @r = $t->read_file('error.log') =~ /reopened "/g;
    @r >= 2 }), 'the master and the worker reopened the error log');

$s = ftp_login($ftp, 'alice', 'pw');
is(ftp_passive($s, 'STOR after.txt', "after\n"), '',
    'FTP upload after the reopen');
ftp_cmd($s, 'QUIT');
close $s;

ok($t->wait_for(sub { $t->read_file('logs/xferlog') =~ /after\.txt/ }),
    'the worker wrote the new transfer log');
unlike($t->read_file('error.log'), qr/\[(?:emerg|crit)\]/,
    'no errors after the reopen');

$t->stop();

# "landlock off": the same open(2) works, and the start warns

unlink "$d/error.log";
conf('landlock off;');
$t->run();

ok(probes('succeeded'),
    'landlock off: the worker and its pool open the file');
unlike($t->read_file('error.log'), qr/landlock: confined/,
    'landlock off: no confinement');
like($t->read_file('stderr'), qr/"landlock off": .*weaker/,
    'landlock off: a warning at the start');

$t->done();
