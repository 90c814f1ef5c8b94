#!/usr/bin/perl

# pgsql_quota.t -- two nodes on one PostgreSQL user store and one moto
# bucket share a user's quota: once node B has counted the home, a quota
# filled through node A refuses the next upload through B (FTP 552, SFTP
# failure), and the refused uploads give back what they charged; a
# delete through B frees room for an upload through A; an upload cut
# mid-way gives back its charge; uploads at once through both never
# store more than quota_bytes (the bucket's listing is the judge); room
# held in A's lease is given to B when B is short of it, and the quota
# still refuses past it; A's worker that ends (a reload) deletes its
# lease before it exits, and B uses the whole room at once; node A
# killed while it holds a lease: B uses the room once the lease is
# swept (the home counted again); the database stopped: a node refuses
# what its lease does not cover, with "cannot be checked" in its log,
# and uploads again once it is back.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Time::HiRes qw/sleep time/;
use IO::Socket::INET;
use POSIX qw/:sys_wait_h/;
use Test::Siftpd qw/port children http_raw/;
use Test::Siftpd::FTP qw/ftp_upload_start/;
use Test::Siftpd::PgSQL;
use Test::Siftpd::S3 qw/s3_proxied s3_keys s3_put/;

my $a = Test::Siftpd->new()->has('ftp', 'sftp', 'http', 'pgsql_user',
    's3_storage');
my $b = Test::Siftpd->new();
my $da = $a->testdir();
my $db = $b->testdir();

my $pg = Test::Siftpd::PgSQL->new($a, 5432);
$pg->start();
my ($moto) = s3_proxied($a);
system('cp', "$da/creds", "$db/creds") == 0 or die 'cp creds';

my $conninfo = $pg->conninfo();
my $max = 1000000;
my %ftp = (A => port(8021), B => port(8022));
my %sftp = (A => port(8023), B => port(8024));
my %api = (A => port(8080), B => port(8081));
my %node = (A => $a, B => $b);

for my $n (['A', $a], ['B', $b]) {
    my ($name, $t) = @$n;
    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
user_store postgresql "$conninfo";
node_name node-$name;
storage cloud {
    driver s3;
    s3_endpoint http://127.0.0.1:$moto;
    s3_bucket files;
    s3_prefix q/;
    s3_credentials file %%TESTDIR%%/creds;
    s3_part_size 5m;
}
ftp { server { listen 127.0.0.1:$ftp{$name}; storage cloud; } }
sftp { server { listen 127.0.0.1:$sftp{$name};
    host_key %%TESTDIR%%/host_key; storage cloud; } }
http { server { listen 127.0.0.1:$api{$name}; } }
EOF
}

system("ssh-keygen -q -t ed25519 -N '' -f $db/key") == 0
    or die 'ssh-keygen failed';
chomp(my $pub = $b->read_file('key.pub'));

$a->run();
$b->run();

for my $t ($a, $b) {
    ok($t->wait_log(qr/PostgreSQL user store: connected/, 30),
        'connected');
}

my $bin = $a->binary();
chomp(my $hash = `echo pw | $bin hash-password`);
$pg->psql("INSERT INTO siftp_users (name, password, home, storage, "
    . "quota_bytes) VALUES ('bob', '$hash', '/bob', 'cloud', $max); "
    . "INSERT INTO siftp_user_rules (name, path, perms) "
    . "VALUES ('bob', '/', 'all'); "
    . "INSERT INTO siftp_user_keys (name, ssh_key) VALUES ('bob', '$pub')");

# the home's marker, as "user add" makes it
$a->write_file('empty', '');
s3_put($moto, 'q/bob/', "$da/empty");

for my $n (100000, 150000, 200000, 300000, 500000, 800000) {
    $a->write_file("f$n", 'x' x $n);
}

# an FTP upload through a node: curl's exit code and output
sub ftp_put {
    my ($node, $size, $name) = @_;
    my $url = "ftp://bob:pw\@127.0.0.1:$ftp{$node}/$name";
    my $out = `curl -sS --max-time 60 -T $da/f$size $url 2>&1`;
    return ($? >> 8, $out);
}

# the same until it succeeds, within 30 s
sub ftp_put_until {
    my ($node, $size, $name) = @_;
    my ($rc, $out);
    my $end = time() + 30;
    for (1 .. 100) {
        ($rc, $out) = ftp_put($node, $size, $name);
        last if $rc == 0 || time() > $end;
        sleep 0.3;
    }
    return ($rc, $out);
}

# an admin's recount of bob through a node's API: the answer
# (the users are read again after the database came back: until then 404)
sub recount {
    my ($node) = @_;
    my ($r, $end) = ('', time() + 10);
    while (time() < $end) {
        $r = http_raw($api{$node}, "POST /api/v1/users/bob/recount "
            . "HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
            . "Connection: close\r\n\r\n") // '';
        last unless $r =~ /^HTTP\/1\.1 404/;
        sleep 0.2;
    }
    return $r;
}

# the shared usage of bob once it is $want, within 10 s
sub shared_until {
    my ($want) = @_;
    my ($v, $end) = ('', time() + 10);
    while (time() < $end) {
        $v = $pg->psql("SELECT bytes FROM siftp_quota WHERE name = 'bob'");
        last if $v eq $want;
        sleep 0.1;
    }
    return $v;
}

# what the bucket holds under bob's home
sub stored {
    my %k = s3_keys($moto, 'q/bob/');
    my $sum = 0;
    $sum += $_ for values %k;
    return $sum;
}

# no lease held: each node gave back what it did not spend (idle)
sub settle {
    my $end = time() + 20;
    while (time() < $end) {
        return 1 if $pg->psql("SELECT count(*) FROM siftp_quota_leases "
            . "WHERE bytes > 0 OR files > 0") eq '0';
        sleep 0.2;
    }
    return 0;
}

# B counts the home first: its own view would stay at 100000

my ($rc, $out) = ftp_put('B', 100000, 'b0');
is($rc, 0, 'B: 100000 bytes stored') or diag($out);
ok(settle(), 'B gives back the lease it did not spend');
($rc, $out) = ftp_put('A', 800000, 'a1');
is($rc, 0, 'A: 800000 more') or diag($out);

# filled through A: B refuses the next upload

($rc, $out) = ftp_put('B', 200000, 'b1');
is($rc, 70, 'B refuses 200000 more by FTP: 552 (curl\'s 70)')
    or diag($out);
($rc, $out) = $b->sftp_batch($sftp{B}, 'bob', "put $da/f200000 b2\n");
isnt($rc, 0, 'and by SFTP') or diag($out);
like($out, qr/Failure|failed|quota/i, 'an SFTP failure') or diag($out);
ok(stored() <= $max, 'the bucket holds no more than the quota');

# what the refused uploads had charged is given back (S3 keeps nothing
# of them); an admin's recount through B replaces the shared usage

is(shared_until('900000'), '900000',
    'the refused uploads gave back what they charged');
like(recount('B'), qr/"bytes":\s*900000\b/, 'B recounts 900000 bytes');
is(shared_until('900000'), '900000', 'the recount replaced the shared usage');

# a delete through B frees room for A

($rc, $out) = $b->sftp_batch($sftp{B}, 'bob', "rm a1\n");
is($rc, 0, 'B deletes the 800000 bytes A stored') or diag($out);
($rc, $out) = ftp_put_until('A', 500000, 'a3');
is($rc, 0, 'A stores 500000 in the room B freed') or diag($out);
settle();

# an upload cut mid-way through A: its charge (seen by A's admin API)
# given back to the shared usage

my ($cs, $cd) = ftp_upload_start($ftp{A}, 'bob', 'pw', 'cut', 'y' x 300000);
my $seen = '';
for (1 .. 100) {
    $seen = usage_api('A');
    last if $seen ne '' && $seen ne '600000';
    sleep 0.1;
}
ok($seen > 600000, "A charged the upload ($seen bytes in use)");
close $cs;
close $cd;
ok($a->wait_log(qr/"cut" \d+ bytes, aborted/, 10), 'the upload was cut');
settle();
is(shared_until('600000'), '600000', 'the cut upload gave its charge back');

like($pg->psql("SELECT bytes, counted FROM siftp_quota WHERE name = 'bob'"),
    qr/^600000\|t$/, 'the database holds the usage of both nodes');

# uploads at once through both: never more than the quota stored

my @kids;
for my $i (1 .. 4) {
    my $node = $i % 2 ? 'A' : 'B';
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        my ($r) = ftp_put($node, 150000, "c$i");
        POSIX::_exit($r ? 1 : 0);       # no END blocks: the servers stay
    }
    push @kids, $pid;
}
my $ok = 0;
for my $pid (@kids) {
    waitpid($pid, 0);
    $ok++ if $? == 0;
}
settle();
my $total = stored();
ok($total <= $max, "uploads at once through A and B: $total bytes stored, "
    . "no more than $max");
ok($ok >= 1 && $ok <= 2, "$ok of the four stored (room for two at most)");

# the usage bob's record shows through a node's admin API, '' unknown
sub usage_api {
    my ($node) = @_;
    my $r = http_raw($api{$node}, "GET /api/v1/users/bob HTTP/1.1\r\n"
        . "Host: x\r\nConnection: close\r\n\r\n") // '';
    return $r =~ /"usage":\s*\{[^}]*"bytes":\s*(\d+)/ ? $1 : '';
}

# the admin API (and the dashboard) of both nodes show the shared usage

my $shared = $pg->psql("SELECT bytes FROM siftp_quota WHERE name = 'bob'");
for my $n ('A', 'B') {
    my $r = '';
    my $end = time() + 10;
    while (time() < $end) {
        $r = http_raw($api{$n}, "GET /api/v1/users/bob HTTP/1.1\r\n"
            . "Host: x\r\nConnection: close\r\n\r\n") // '';
        last if $r =~ /"bytes":\s*$shared\b/;
        sleep 0.2;
    }
    like($r, qr/"bytes":\s*$shared\b/,
        "node ${n}'s admin API shows the shared usage, $shared bytes");
}

# the database stopped: no room beyond the lease, service back after

($rc, $out) = $b->sftp_batch($sftp{B}, 'bob',
    join('', map { "-rm c$_\n" } 1 .. 4));     # "-": on past a missing one
settle();

# room in A's lease: B, short of it, asks A for it and stores exactly the
# rest of the quota; past it the quota still refuses

is(shared_until('600000'), '600000', '600000 bytes stored');
($rc, $out) = ftp_put('A', 100000, 'l1');
is($rc, 0, 'A stores 100000') or diag($out);
my $held = $pg->psql("SELECT bytes FROM siftp_quota_leases "
    . "WHERE node = 'node-A' AND bytes > 0");
($rc, $out) = ftp_put('B', 300000, 'l2');
is($rc, 0, "B stores the 300000 left, A's lease held $held of them")
    or diag($out);
($rc, $out) = ftp_put('A', 100000, 'l3');
is($rc, 70, 'the quota full: A refuses 100000 more (552)') or diag($out);
ok(stored() <= $max, 'no more than the quota stored');
($rc, $out) = $b->sftp_batch($sftp{B}, 'bob', "rm l1\nrm l2\n");
settle();

$pg->stop();
ok($a->wait_log(qr/PostgreSQL user store: (read|write|query) failed/, 30),
    'A lost the database');
($rc, $out) = ftp_put('A', 100000, 'd1');
is($rc, 70, 'database down: A refuses an upload its lease lacks: 552')
    or diag($out);
ok($a->wait_log(qr/quota of "bob" cannot be checked/, 10),
    'and logs that the quota cannot be checked');
$pg->start();
($rc, $out) = ftp_put_until('A', 100000, 'd1');
is($rc, 0, 'the database back: A stores again') or diag($out);

# A's worker ends with a lease held (a reload): its lease row is gone once
# it exited, and B stores the whole room left at once

settle();
my $base = $pg->psql("SELECT bytes FROM siftp_quota WHERE name = 'bob'");
my $left = $max - $base - 100000;
$a->write_file("f$left", 'w' x $left);
my @old = $a->workers();
($rc, $out) = ftp_put('A', 100000, 'r1');
is($rc, 0, 'A stores 100000') or diag($out);
$held = $pg->psql("SELECT bytes FROM siftp_quota_leases "
    . "WHERE node = 'node-A' AND worker_pid = $old[0]");
ok($held ne '', "A's worker has its lease row ($held bytes)");
$a->reload();
ok($a->wait_for(sub { !kill(0, $old[0]) }, 30), "A's old worker exited");
is($pg->psql("SELECT count(*) FROM siftp_quota_leases "
    . "WHERE node = 'node-A' AND worker_pid = $old[0]"), '0',
    'its lease row was deleted before it exited');
($rc, $out) = ftp_put('B', $left, 'r2');
is($rc, 0, "B stores the whole room left, $left") or diag($out);
($rc, $out) = $b->sftp_batch($sftp{B}, 'bob', "rm r1\nrm r2\n");

# A killed while it holds a lease: B uses the room once it is swept
# (recounted first: the usage is what the bucket holds)

$total = stored();
like(recount('B'), qr/"bytes":\s*$total\b/, "B recounts $total bytes");
is(shared_until($total), $total, 'the database has the recount');
settle();
my $room = $max - $total;
my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ftp{A}",
    Timeout => 10) or die "connect: $!";
my @r = map { scalar <$s> } 1;
for my $c ('USER bob', 'PASS pw', 'TYPE I', 'PASV') {
    print $s "$c\r\n";
    my $l;
    do { $l = <$s> } while defined $l && $l !~ /^\d{3} /;
    push @r, $l;
}
my ($h1, $h2, $h3, $h4, $p1, $p2) = $r[-1] =~ /(\d+),(\d+),(\d+),(\d+),(\d+),(\d+)/;
my $data = IO::Socket::INET->new(PeerAddr => "127.0.0.1:" . ($p1 * 256 + $p2),
    Timeout => 10) or die "data connect: $!";
print $s "STOR slow\r\n";
print $data 'y' x 65536;
my $lease = '';
my $end = time() + 10;
while (time() < $end) {
    $lease = $pg->psql("SELECT bytes FROM siftp_quota_leases "
        . "WHERE node = 'node-A' AND bytes > 0");
    last if $lease ne '';
    sleep 0.1;
}
ok($lease ne '', "A holds a lease ($lease bytes) for its upload");

my $master = delete $a->{_pid};
kill 'KILL', $master, children($master);
waitpid($master, 0);
close $data;
close $s;

$a->write_file('room', 'z' x ($room - 1000));
($rc, $out) = (1, '');
$end = time() + 60;
for (1 .. 200) {
    my $url = "ftp://bob:pw\@127.0.0.1:$ftp{B}/room";
    $out = `curl -sS --max-time 60 -T $da/room $url 2>&1`;
    $rc = $? >> 8;
    last if $rc == 0 || time() > $end;
    sleep 0.5;
}
is($rc, 0, 'A killed: B stores into the room its lease held') or diag($out);
ok(stored() <= $max, 'still no more than the quota stored');

$a->run();
ok($a->wait_log(qr/PostgreSQL user store: connected/, 30),
    'A started again');

$b->stop();
is(join("\n", grep { /\[alert\]|runtime error:|Sanitizer/ }
    split /\n/, $b->read_file('error.log') . $b->read_file('stderr')), '',
    'B: no alerts, no sanitizer errors');

$a->done();
