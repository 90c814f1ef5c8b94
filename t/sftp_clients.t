#!/usr/bin/perl

# sftp_clients.t -- SFTP with real clients beyond t/sftp.t: OpenSSH sftp in
# batch mode for the commands issue 5 lists (ls -l, chmod, symlink, reget,
# reput, put -p and reput -p keeping mode and times, cp through copy-data),
# a put and a get with each AEAD cipher (AES-GCM through siftp's kernel
# where the CPU has it), curl's sftp:// download and upload, and lftp's
# mirror of a tree of about a hundred files with spaces and UTF-8 names,
# both ways, byte for byte.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use File::Find;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no OpenSSH client') unless -x '/usr/bin/sftp';

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time 20s;
    }
}
EOF2

# the same home for both: "nochmod" may upload but not change modes

for (['alice',
      'list,download,upload,overwrite,delete,rename,mkdir,rmdir,chmod'],
     ['nochmod', 'list,download,upload,overwrite'])
{
    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $_->[0], '--home', '/alice', '--perms', $_->[1]
        or die;
    print $fh "pw-$_->[0]\n";
    close $fh;
}

system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0 or die;
my $pub = $t->read_file('key.pub');
chomp $pub;
my $users = $t->read_file('users');
$users =~ s/^\[(alice|nochmod)\]\n/[$1]\nssh_key = $pub\n/mg;
$t->write_file('users', $users);

$t->run();
my $port = port(8022);
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

my @opts = ('-o', 'StrictHostKeyChecking=no', '-o',
    'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o',
    'ConnectTimeout=10');

sub sftp {
    my ($batch, $user, $cipher) = @_;
    $user //= 'alice';
    my $c = $cipher ? "-c $cipher" : '';
    $t->write_file('batch', $batch);
    my $out = `timeout 30 sftp -b $d/batch -P $port @opts $c -i $d/key $user\@127.0.0.1 2>&1`;
    return ($? >> 8, $out);
}

sub same {
    my ($a, $b) = @_;
    return -f $a && -f $b && system('cmp', '-s', $a, $b) == 0;
}

my $a = "$d/data/alice";
my ($rc, $out);

system("head -c 3000000 /dev/urandom > $d/f3") == 0 or die;

# ls -l, chmod, symlink

($rc, $out) = sftp("put $d/f3 f3\nchmod 600 f3\nsymlink f3 s3\nls -l\n");
is($rc, 0, 'put, chmod, symlink, ls -l') or diag($out);
is((stat "$a/f3")[2] & 0777, 0600, 'chmod 600');
is(readlink("$a/s3"), 'f3', 'symlink made');
like($out, qr/^-rw------- .* 3000000 .* f3$/m, 'ls -l: mode, size, name');
like($out, qr/^lrwxrwxrwx .* s3$/m, 'ls -l: the link');

# reget: a local file cut short is completed

system("head -c 1000000 $d/f3 > $d/f3.back") == 0 or die;
($rc, $out) = sftp("reget f3 $d/f3.back\n");
is($rc, 0, 'reget') or diag($out);
ok(same("$d/f3", "$d/f3.back"), 'reget completed the file');

# reput: a remote file cut short is completed in place

system("head -c 1234567 $d/f3 > $a/r3") == 0 or die;
my $ino = (stat "$a/r3")[1];
($rc, $out) = sftp("reput $d/f3 r3\n");
is($rc, 0, 'reput') or diag($out);
ok(same("$d/f3", "$a/r3"), 'reput completed the file');
is((stat "$a/r3")[1], $ino, 'reput wrote in place');

# reput of 20 MiB in pipelined WRITEs onto a handle opened with APPEND:
# they complete out of order on the thread pool, the bytes land in order

system("head -c 20971520 /dev/urandom > $d/f20") == 0 or die;
system("head -c 999 $d/f20 > $a/r20") == 0 or die;
for my $try (1 .. 3) {
    ($rc, $out) = sftp("reput $d/f20 r20\n");
    last unless $rc == 0 && same("$d/f20", "$a/r20");
    system("head -c 999 $d/f20 > $a/r20") == 0 or die if $try < 3;
}
is($rc, 0, 'reput of 20 MiB') or diag($out);
ok(same("$d/f20", "$a/r20"), 'reput of 20 MiB: in order, three times');

# put -p, reput -p: mode and times kept, through a temporary name and not

chmod 0640, "$d/f3";
utime 1000000000, 1234567890, "$d/f3";

($rc, $out) = sftp("put -p $d/f3 p3\n");
is($rc, 0, 'put -p') or diag($out);
my @st = stat "$a/p3";       # before a read moves the atime (relatime)
is($st[2] & 07777, 0640, 'put -p kept the mode');
is($st[9], 1234567890, 'put -p kept the mtime');
is($st[8], 1000000000, 'put -p kept the atime');
ok(same("$d/f3", "$a/p3"), 'put -p identical');

system("head -c 777 $d/f3 > $a/q3") == 0 or die;
chmod 0600, "$a/q3";
utime 1000000000, 1111111111, "$d/f3";
($rc, $out) = sftp("reput -p $d/f3 q3\n");
is($rc, 0, 'reput -p') or diag($out);
ok(same("$d/f3", "$a/q3"), 'reput -p identical');
is((stat "$a/q3")[2] & 07777, 0640, 'reput -p set the mode');
is((stat "$a/q3")[9], 1111111111, 'reput -p kept the mtime');

# without "chmod" the FSETSTAT is refused: neither mode nor times change

($rc, $out) = sftp("put -p $d/f3 n3\n", 'nochmod');
ok(same("$d/f3", "$a/n3"), 'put -p without chmod: uploaded');
isnt((stat "$a/n3")[2] & 07777, 0640, 'put -p without chmod: mode not set');
isnt((stat "$a/n3")[9], 1111111111, 'put -p without chmod: times not set');
like($out, qr/denied/i, 'put -p without chmod: the client was told');

# cp: copy-data

($rc, $out) = sftp("cp f3 c3\n");
is($rc, 0, 'cp') or diag($out);
ok(same("$a/f3", "$a/c3"), 'cp identical');

# the rest of the list once more in one session, with df

($rc, $out) = sftp("mkdir dd\nrename c3 dd/c4\nln dd/c4 dd/h4\nls -l dd\n"
    . "df\nrm dd/c4\nrm dd/h4\nrmdir dd\nget f3 $d/g3\n");
is($rc, 0, 'mkdir, rename, ln, df, rm, rmdir, get') or diag($out);
ok(!-e "$a/dd", 'directory gone');
ok(same("$a/f3", "$d/g3"), 'get identical');

# each AEAD cipher both ways, 3 MB in many packets

for my $c (qw/aes128-gcm@openssh.com aes256-gcm@openssh.com
    chacha20-poly1305@openssh.com/)
{
    unlink "$d/k3";
    ($rc, $out) = sftp("put $d/f3 k3\nget k3 $d/k3\n", 'alice', $c);
    is($rc, 0, "$c: put and get") or diag($out);
    ok(same("$d/f3", "$a/k3") && same("$d/f3", "$d/k3"),
        "$c: both identical");
}

# curl sftp:// (libssh2): download and upload with a key, no known hosts

SKIP: {
    skip 'curl without sftp', 4 unless `curl -V 2>&1` =~ /^Protocols:.*\bsftp\b/m;

    my $curl = "timeout 30 curl -sS --insecure -u alice: --key $d/key"
        . " --pubkey $d/key.pub";

    system("$curl -o $d/curl.back sftp://127.0.0.1:$port/f3 2>$d/curl.err");
    is($? >> 8, 0, 'curl download') or diag($t->read_file('curl.err'));
    ok(same("$a/f3", "$d/curl.back"), 'curl download identical');

    system("$curl -T $d/f3 sftp://127.0.0.1:$port/curl.up 2>$d/curl.err");
    is($? >> 8, 0, 'curl upload') or diag($t->read_file('curl.err'));
    ok(same("$d/f3", "$a/curl.up"), 'curl upload identical');
}

# lftp sftp://: mirror a tree up and down again

SKIP: {
    skip 'no lftp', 5 unless -x '/usr/bin/lftp';

    my $src = "$d/tree";
    my @names;

    for my $i (1 .. 100) {
        my $dir = $i % 3 ? 'sub dir' : "d\x{e9}j\x{e0} vu";
        $dir = '.' if $i % 7 == 0;
        my $name = $i % 2 ? "file $i.txt" : "\x{fc}ber \x{2603} $i";
        utf8::encode($dir);
        utf8::encode($name);
        push @names, "$dir/$name";
    }

    for my $n (@names) {
        my $p = "$src/$n";
        (my $dir = $p) =~ s{/[^/]+$}{};
        system('mkdir', '-p', $dir) == 0 or die;
        system("head -c " . (1 + int(rand(70000))) . " /dev/urandom > '$p'")
            == 0 or die;
    }

    my $ssh = "ssh -a -x -p $port @opts -i $d/key";
    my $lftp = "timeout 60 lftp -c \"set sftp:connect-program '$ssh';"
        . " set net:max-retries 1; set net:timeout 20;"
        . " open -u alice,x sftp://127.0.0.1:$port;";

    system("$lftp mirror -R --no-perms $src /up\" >$d/lftp.out 2>&1");
    is($? >> 8, 0, 'lftp mirror -R') or diag($t->read_file('lftp.out'));

    system("$lftp mirror --no-perms /up $d/down\" >$d/lftp.out 2>&1");
    is($? >> 8, 0, 'lftp mirror') or diag($t->read_file('lftp.out'));

    my $diff = `diff -r $src $a/up 2>&1`;
    is($diff, '', 'uploaded tree identical');
    $diff = `diff -r $src $d/down 2>&1`;
    is($diff, '', 'downloaded tree identical');

    my $n = 0;
    find(sub { $n++ if -f $_ }, "$d/down");
    is($n, 100, 'all 100 files came back');
}

$t->done();
