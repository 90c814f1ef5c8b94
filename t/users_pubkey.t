#!/usr/bin/perl

# users_pubkey.t -- an SFTP public-key login decides on the users file as
# it is at that moment, with no reload and no password login in between:
# a disabled user, a removed key and a deleted user are refused at once; a
# re-enabled user and a newly added key are accepted at once.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no OpenSSH client')
    unless -x '/usr/bin/sftp' && -x '/usr/bin/ssh-keygen';

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF

$t->user_add('alice', 'alice-pw');
$t->user_key('alice');
system("ssh-keygen -q -t ed25519 -N '' -f $d/other") == 0 or die;

# the file replaced as "siftpd user" replaces it: a new inode
sub edit_users {
    my ($edit) = @_;
    my $text = $t->read_file('users');
    local $_ = $text;
    $edit->();
    die "users file unchanged" if $_ eq $text;
    $t->write_file('users.new', $_);
    rename "$d/users.new", "$d/users" or die "rename: $!";
}

sub key_login {
    my ($key) = @_;
    my $port = port(8022);
    $t->write_file('batch', "pwd\n");
    my $out = `timeout 30 sftp -b $d/batch -P $port -i $d/$key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o PasswordAuthentication=no -o ConnectTimeout=10 alice\@127.0.0.1 2>&1`;
    return ($? >> 8) == 0 && $out =~ m{Remote working directory: /$}m;
}

$t->run();

ok(key_login('key'), 'key login');

edit_users(sub { s/^disabled = no$/disabled = yes/m });
ok(!key_login('key'), 'disabled in the file: refused at once');

edit_users(sub { s/^disabled = yes$/disabled = no/m });
ok(key_login('key'), 'enabled again: accepted at once');

edit_users(sub { s/^ssh_key = .*\n//m });
ok(!key_login('key'), 'key removed from the file: refused at once');

my $other = $t->read_file('other.pub');
chomp $other;
edit_users(sub { s/^\[alice\]\n/[alice]\nssh_key = $other\n/m });
ok(key_login('other'), 'a newly added key: accepted at once');

open my $fh, '-|', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
    'user', 'del', 'alice' or die;
close $fh;
is($? >> 8, 0, 'user del alice');
ok(!key_login('other'), 'a deleted user: refused at once');

like($t->read_file('error.log'), qr/users file ".*" re-read/,
    'the workers re-read the file');

$t->done();
