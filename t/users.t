#!/usr/bin/perl

# users.t -- "siftpd hash-password" and "siftpd user ..." end to end: the
# hash is a PHC string libargon2 verifies, add/list/show/passwd/del round
# trip on the configured users file, bad input exits 1 with a message;
# new hashes cost what password_hash_memory and password_hash_passes say.

use warnings;
use strict;

use File::Spec;
use File::Temp qw/tempdir/;
use Test::More;

my $bin = File::Spec->rel2abs($ENV{TEST_SIFTPD_BINARY} || 'objs/siftpd');
plan(skip_all => "no siftpd binary at $bin") unless -x $bin;

my $dir = tempdir('siftpd-users-XXXXXXXX', TMPDIR => 1, CLEANUP => 1);
mkdir "$dir/conf";

open my $fh, '>', "$dir/conf/siftpd.conf" or die $!;
print $fh "daemon off;\nerror_log stderr;\n"
    . "events { worker_connections 64; }\nusers conf/users;\n";
close $fh;

# a verifier linked with libargon2, the library the daemon uses
open $fh, '>', "$dir/verify.c" or die $!;
print $fh <<'END';
#include <argon2.h>
#include <string.h>
int main(int argc, char **argv) {
    return argon2id_verify(argv[1], argv[2], strlen(argv[2])) != ARGON2_OK;
}
END
close $fh;
my $cc = $ENV{CC} || 'cc';
my $have_verify = system("$cc -o $dir/verify $dir/verify.c -largon2") == 0;

sub run {
    my ($input, @args) = @_;
    my $cmd = join ' ', map { "'$_'" } $bin, '-p', $dir, '-c',
        'conf/siftpd.conf', @args;
    open my $in, '>', "$dir/stdin" or die $!;
    print $in $input if defined $input;
    close $in;
    my $out = `$cmd <$dir/stdin 2>$dir/stderr`;
    my $rc = $? >> 8;
    open my $e, '<', "$dir/stderr" or die $!;
    local $/;
    my $err = <$e> // '';
    return ($rc, $out, $err);
}

plan(tests => 29);

# hash-password

my ($rc, $out, $err) = run("s3cret\n", 'hash-password');
is($rc, 0, 'hash-password exits 0');
like($out, qr/^\$argon2id\$v=19\$m=65536,t=3,p=1\$[A-Za-z0-9+\/]{22}\$[A-Za-z0-9+\/]{43}\n\z/,
    'default-cost PHC string');
chomp(my $hash = $out);

SKIP: {
    skip 'no C compiler for the libargon2 verifier', 2 unless $have_verify;
    is(system("$dir/verify", $hash, 's3cret'), 0, 'libargon2 verifies it');
    isnt(system("$dir/verify", $hash, 's3cre'), 0, 'and refuses another');
}

($rc, $out, $err) = run('', 'hash-password');
is($rc, 1, 'empty password refused');
like($err, qr/^siftpd: \[error\] empty password/m, 'with a message');

# user add / list / show / passwd / del

($rc, $out, $err) = run("pw-alice\n", 'user', 'add', 'alice', '--home',
    '/alice', '--perms', 'list,download,upload');
is($rc, 0, 'user add alice') or diag($err);
unlike($err, qr/does not exist/, 'creating the users file: no warning');
($rc) = run("pw-bob\n", qw/user add bob --storage cloud --disabled/);
is($rc, 0, 'user add bob');

($rc, $out, $err) = run("x\n", qw/user add alice/);
is($rc, 1, 'adding alice again fails');
like($err, qr/\[error\] user "alice" already exists/, 'with a message');

($rc, $out) = run(undef, qw/user list/);
is($out, "alice\nbob (disabled)\n", 'user list');

($rc, $out) = run(undef, qw/user show alice/);
like($out, qr/^home = \/alice$/m, 'show: home');
like($out, qr/^perms = list,download,upload$/m, 'show: perms');
unlike($out, qr/\$argon2id\$/, 'show never prints the hash');

open $fh, '<', "$dir/conf/users" or die $!;
my $file = do { local $/; <$fh> };
close $fh;
my ($h1) = $file =~ /\[alice\]\npassword = (\S+)/;
ok($h1, 'the file has alice\'s hash');
like($h1 // '', qr/^\$argon2id\$v=19\$m=65536,t=3,p=1\$/,
    'at the default cost');

# a cost of its own for the hashes made from now on

sub conf {
    open my $c, '>', "$dir/conf/siftpd.conf" or die $!;
    print $c "daemon off;\nerror_log stderr;\n"
        . "events { worker_connections 64; }\nusers conf/users;\n@_";
    close $c;
}

conf("password_hash_memory 32m;\npassword_hash_passes 4;\n");
($rc) = run("pw-new\n", qw/user passwd alice/);
is($rc, 0, 'user passwd');

open $fh, '<', "$dir/conf/users" or die $!;
$file = do { local $/; <$fh> };
close $fh;
my ($h2) = $file =~ /\[alice\]\npassword = (\S+)/;

SKIP: {
    skip 'no verifier', 1 unless $have_verify && $h2;
    ok($h1 ne $h2 && system("$dir/verify", $h2, 'pw-new') == 0,
        'the new password verifies');
}
like($h2 // '', qr/^\$argon2id\$v=19\$m=32768,t=4,p=1\$/,
    'at the configured cost');

# below the cost a login accepts, or above 4g: refused
conf("password_hash_memory 8m;\n");
($rc, $out, $err) = run(undef, qw/user list/);
ok($rc == 1 && $err =~ /"password_hash_memory" must be 19m to 4g/,
    'password_hash_memory 8m refused') or diag($err);
conf("password_hash_passes 1;\n");
($rc, $out, $err) = run(undef, qw/user list/);
ok($rc == 1 && $err =~ /"password_hash_passes" must be 2 to 64/,
    'password_hash_passes 1 refused') or diag($err);
conf("password_hash_memory 5g;\n");
($rc, $out, $err) = run(undef, qw/user list/);
ok($rc == 1 && $err =~ /"password_hash_memory" must be 19m to 4g/,
    'password_hash_memory 5g refused') or diag($err);
conf('');

($rc) = run(undef, qw/user del bob/);
is($rc, 0, 'user del bob');
($rc, $out) = run(undef, qw/user list/);
is($out, "alice\n", 'bob is gone');

($rc, $out, $err) = run(undef, qw/user del carol/);
ok($rc == 1 && $err =~ /\[error\] no user "carol"/, 'del of unknown user');

($rc, $out, $err) = run("x\n", 'user', 'add', 'dave', '--perms', 'fly');
ok($rc == 1 && $err =~ /\[error\] invalid value "fly" of "perms"/,
    'bad permission refused');

opendir my $d, "$dir/conf" or die $!;
my @tmp = grep { /\.tmp/ } readdir $d;
closedir $d;
is(scalar @tmp, 0, 'no temporary files left');

# a misspelt key in the users file names the key it is closest to

open $fh, '>>', "$dir/conf/users" or die $!;
print $fh "quota_byts = 1m\n";
close $fh;
($rc, $out, $err) = run(undef, qw/user list/);
ok($rc == 1 && $err =~ /unknown key "quota_byts" in \S*users:\d+, did you mean "quota_bytes"\?$/m,
    'a misspelt key: did you mean') or diag($err);
