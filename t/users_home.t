#!/usr/bin/perl

# users_home.t -- "siftpd user add" makes the home in the user's storage,
# owned by the workers' user ("user nobody nogroup"), and says so on one
# line; the user then lists and uploads there.  Storage failures are logged
# with the errno and the path (a home removed behind the server's back, a
# directory the workers cannot write), and a refused permission by name.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;
plan(skip_all => 'not root') unless $> == 0;
my ($nobody, $nogroup) = (getpwnam('nobody'))[2, 3];
plan(skip_all => 'no user nobody') unless defined $nobody;
my $group = getgrgid($nogroup);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
user nobody $group;
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
storage kept { driver posix; root %%TESTDIR%%/kept; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
EOF

# a root the workers cannot write, as "make run" used to make var/data
mkdir "$d/kept";

sub user_add {
    my ($name, @args) = @_;
    my $out = `echo pw-$name | ${\ $t->binary()} -p $d/ -c $d/siftpd.conf user add $name @args 2>$d/cli.err`;
    return ($? >> 8, $out);
}

my ($rc, $out) = user_add('bob', '--home', '/bob/in',
    '--perms', 'list,download,upload,mkdir');
is($rc, 0, 'user add bob') or diag($t->read_file('cli.err'));
is($out, "user \"bob\" added, home \"/bob/in\" in storage \"local\" "
    . "created\n", 'it says what it did');
ok(-d "$d/data/bob/in", 'the home was made');
is((stat "$d/data/bob/in")[4], $nobody, 'owned by the workers\' user');
is((stat "$d/data/bob")[4], $nobody, 'and so is the level above it');
is((stat "$d/data")[4], $nobody, 'as is the storage root made for it');
is((stat "$d/users")[4], $nobody, 'the users file is theirs too');

($rc, $out) = user_add('carol', '--home', '/bob', '--perms', 'list');
is($out, "user \"carol\" added, home \"/bob\" in storage \"local\" "
    . "exists\n", 'an existing home is said to exist');

($rc, $out) = user_add('dave', '--home', '/dave');
is($rc, 0, 'user add dave');

# a directory in bob's home the workers cannot write
mkdir "$d/data/bob/in/locked";

$t->run();

like($t->read_file('stderr') . $t->read_file('error.log'),
    qr/storage root ".*\/kept" is not writable by the workers' user/,
    'a root the workers cannot write is reported at start');

# runs FTP commands as a user; the reply codes, space-separated
sub ftp {
    my ($user, @cmds) = @_;
    my $port = port(8021);
    my $script = join "\n", map { "    run(lambda: $_)" } @cmds;
    my $codes = `python3 - <<'PY' 2>&1
import ftplib, io
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=15)
f.login('$user', 'pw-$user')
out = []
def run(fn):
    try:
        r = fn()
        out.append(str(r).split()[0] if isinstance(r, str) else '2xx')
    except ftplib.all_errors as e:
        out.append(str(e).split()[0])
data = io.BytesIO(b'hello')
if True:
$script
print(' '.join(out))
f.quit()
PY`;
    chomp $codes;
    return $codes;
}

is(ftp('bob', "f.nlst()", "f.storbinary('STOR up.txt', data)"),
    '2xx 226', 'bob lists and uploads in the new home');
is($t->read_file('data/bob/in/up.txt'), 'hello', 'the upload arrived');

is(ftp('bob', "f.storbinary('STOR locked/x', data)"), '550',
    'an upload into a directory the workers cannot write: 550');
like($t->read_file('error.log'),
    qr/\[error\].*"bob\/in\/locked\/[^"]*" failed in storage "local" \(13: Permission denied\).*user: "bob"/,
    'logged at error with the path, the errno and the user');

is(ftp('carol', "f.storbinary('STOR y', data)"), '550',
    'an upload without the upload permission: 550');
like($t->read_file('error.log'),
    qr/permission denied: "\/y" needs upload.*user: "carol"/,
    'the permission is named');

rmdir "$d/data/dave" or die "rmdir: $!";
is(ftp('dave', "f.nlst()"), '550', 'a removed home: 550');
like($t->read_file('error.log'),
    qr/"dave" failed in storage "local" \(2: No such file or directory\).*user: "dave"/,
    'logged with the path and the errno');
like($t->read_file('error.log'),
    qr/\[error\].*the home "\/dave" does not exist in storage "local".*user: "dave"/,
    'and the missing home is named');

$t->done();
