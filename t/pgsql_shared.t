#!/usr/bin/perl

# pgsql_shared.t -- two nodes on one PostgreSQL user store share their
# login failures and bans: an address banned through node A is refused by
# node B at once, a ban lifted through B's admin API is lifted on A,
# failures through A and through B add up to a ban; a user's
# max_sessions counts the sessions open on both nodes, and a node killed
# stops counting once its heartbeat is old; either node's /api/v1/nodes
# lists both with their sessions per user, and a killed one as not alive;
# rows that neither ban nor count failures any more are deleted; with the
# database stopped a node still bans on its own, and its admin API still
# answers.
# The clients' addresses come in PROXY protocol headers, so that each
# check has an address of its own.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Time::HiRes qw/sleep time/;
use IO::Socket::INET;
use JSON::PP;
use Test::Siftpd qw/port http_raw children/;
use Test::Siftpd::PgSQL;

my $a = Test::Siftpd->new()->has('ftp', 'http', 'pgsql_user');
my $b = Test::Siftpd->new();

my $pg = Test::Siftpd::PgSQL->new($a, 5432);
$pg->start();

my $conninfo = $pg->conninfo();
my %ftp = (A => port(8021), B => port(8022));
my %api = (A => port(8080), B => port(8081));

my $token = 'admin-token-0123456789abcdef';

for my $n (['A', $a], ['B', $b]) {
    my ($name, $t) = @$n;
    mkdir $t->testdir() . '/data';
    $t->write_file('tokens', "$token admin ops\n");
    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
user_store postgresql "$conninfo";
node_name node-$name;
login_max_failures 4;
login_ban_time 10m;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:$ftp{$name} proxy_protocol;
        proxy_protocol_from 127.0.0.1;
        storage local;
    }
}
http { server { listen 127.0.0.1:$api{$name}; api_token_file tokens; } }
EOF
}

$a->run();
$b->run();

for my $t ($a, $b) {
    ok($t->wait_log(qr/PostgreSQL user store: connected/, 30),
        'connected');
}

my $bin = $a->binary();
chomp(my $hash = `echo alice-pw | $bin hash-password`);
$pg->psql("INSERT INTO siftp_users (name, password) VALUES ('alice', "
    . "'$hash'); INSERT INTO siftp_user_rules (name, path, perms) "
    . "VALUES ('alice', '/', 'list,download')");
chomp($hash = `echo bob-pw | $bin hash-password`);
$pg->psql("INSERT INTO siftp_users (name, password, max_sessions) VALUES "
    . "('bob', '$hash', 2); INSERT INTO siftp_user_rules (name, path, perms) "
    . "VALUES ('bob', '/', 'list,download')");

# the server's reply, its lines together
sub reply {
    my ($s) = @_;
    my $r = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm(30);
        while (defined(my $l = $s->getline())) {
            $r .= $l;
            last if $l =~ /^\d{3} /;
        }
        alarm(0);
    };
    alarm(0);
    $r =~ s/\s+\z//;
    return $r;
}

# a login through a node from the client address $src: "ok", or the
# first reply that is not the expected one
sub login {
    my ($node, $src, $user, $pass) = @_;

    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ftp{$node}",
        Proto => 'tcp', Timeout => 10) or return "no connection: $!";
    $s->print("PROXY TCP4 $src 127.0.0.1 50000 21\r\n");

    my $r = reply($s);
    return $r unless $r =~ /^220/;
    $s->print("USER $user\r\n");
    $r = reply($s);
    return $r unless $r =~ /^331/;
    $s->print("PASS $pass\r\n");
    $r = reply($s);
    $s->print("QUIT\r\n");
    close $s;

    return $r =~ /^230/ ? 'ok' : $r;
}

# a session left open: the socket and the reply to PASS
sub session {
    my ($node, $src, $user, $pass) = @_;

    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ftp{$node}",
        Proto => 'tcp', Timeout => 10) or return (undef, "no connection");
    $s->print("PROXY TCP4 $src 127.0.0.1 50000 21\r\n");
    my $r = reply($s);
    return (undef, $r) unless $r =~ /^220/;
    $s->print("USER $user\r\n");
    $r = reply($s);
    return (undef, $r) unless $r =~ /^331/;
    $s->print("PASS $pass\r\n");
    $r = reply($s);
    return ($r =~ /^230/ ? $s : undef, $r);
}

# the reply of a node to $src until it matches, within 20 seconds
sub until_login {
    my ($node, $src, $re, $user, $pass) = @_;
    my ($end, $r) = (time() + 20);
    for (1 .. 100) {
        $r = login($node, $src, $user // 'alice', $pass // 'alice-pw');
        return $r if $r =~ $re || time() > $end;
        sleep 0.2;
    }
    return $r;
}

my $banned = qr/^421 Too many login failures/;

# the admin API's status line, with the token or another
sub api {
    my ($node, $method, $path, $tok) = @_;
    my $r = http_raw($api{$node}, "$method /api/v1/$path HTTP/1.1\r\n"
        . "Host: x\r\nAuthorization: Bearer " . ($tok // $token) . "\r\n"
        . "Connection: close\r\n\r\n") // '';
    return $r;
}

# GET /api/v1/nodes through a node: the answer decoded, or undef
sub nodes {
    my ($node) = @_;
    my ($status, $body) = api($node, 'GET', 'nodes')
        =~ m{^HTTP/1\.1 (\d+).*?\r\n\r\n(.*)}s or return undef;
    return $status == 200 ? eval { decode_json($body) } : undef;
}

# "node-A:alive:self:bob=1,..." for each node of an answer
sub nodes_text {
    my ($l) = @_;
    return 'none' unless $l;
    return join(' ', map { join(':', $_->{name},
        $_->{alive} ? 'alive' : 'gone', $_->{self} ? 'self' : 'other',
        join(',', map { "$_->{name}=$_->{sessions}" } @{$_->{users}})) }
        @{$l->{nodes}});
}

sub fail_times {
    my ($node, $src, $n) = @_;
    my @r = map { login($node, $src, 'alice', 'wrong') } 1 .. $n;
    return join(', ', @r);
}

# banned through A, refused by B

is(login('B', '198.51.100.7', 'alice', 'alice-pw'), 'ok',
    'alice logs in through B');

like(fail_times('A', '198.51.100.7', 4), qr/^(530 [^,]*, ){3}530 /,
    'four wrong passwords through A');
like(login('A', '198.51.100.7', 'alice', 'alice-pw'), $banned,
    'A bans the address');
like(until_login('B', '198.51.100.7', $banned), $banned,
    'B refuses the address A banned');
is(login('B', '198.51.100.8', 'alice', 'alice-pw'), 'ok',
    'and lets another address in');
like($b->read_file('error.log'),
    qr/address 198\.51\.100\.7 banned for \d+s by the shared bans/,
    'B logs the ban it was told');
is($pg->psql("SELECT banned_by FROM siftp_bans "
    . "WHERE source = '198.51.100.7' AND banned_until > now()"), 'node-A',
    'the database holds the ban, by node A');

like(api('B', 'GET', 'bans'), qr/"198\.51\.100\.7"/, 'B lists the ban');

# lifted through B, lifted on A

like(api('B', 'DELETE', 'bans/198.51.100.7'), qr/^HTTP\/1\.1 204/,
    'the ban lifted through B');
is(until_login('A', '198.51.100.7', qr/^ok$/), 'ok',
    'A lets the address in again');

# failures through both nodes add up

like(fail_times('A', '198.51.100.9', 2), qr/^530 .*, 530 /,
    'two wrong passwords through A');
like(fail_times('B', '198.51.100.9', 2), qr/^530 .*, 530 /,
    'two through B');
like(until_login('A', '198.51.100.9', $banned), $banned,
    'four in all: A refuses the address');
like(until_login('B', '198.51.100.9', $banned), $banned,
    'and B');

# rows past their ban and their failure window are deleted at a connect

$pg->psql("INSERT INTO siftp_bans (source, failures, window_start, "
    . "banned_until) VALUES "
    . "('203.0.113.1', 3, now() - interval '1 day', now() - interval '1 h'), "
    . "('203.0.113.2', 0, now() - interval '1 day', now() + interval '1 h'), "
    . "('203.0.113.3', 2, now(), NULL), "
    . "('203.0.113.4', 1, now() - interval '1 day', NULL)");

# a node started later learns the bans held

$b->stop();
$b->run();
like(until_login('B', '198.51.100.9', $banned), $banned,
    'B, started again, still refuses the address');

my $left = '';
my $end = time() + 20;
for (1 .. 100) {
    $left = $pg->psql("SELECT string_agg(source, ' ' ORDER BY source) "
        . "FROM siftp_bans WHERE source LIKE '203.0.113.%'");
    last if $left !~ /203\.0\.113\.[14]/ || time() > $end;
    sleep 0.2;
}
is($left, '203.0.113.2 203.0.113.3',
    'expired rows deleted; a ban and a failure window still running kept');

# max_sessions 2 over both nodes

my ($s1, $r1) = session('A', '198.51.100.20', 'bob', 'bob-pw');
like($r1, qr/^230/, 'bob\'s first session, on A');
my ($s2, $r2) = session('B', '198.51.100.20', 'bob', 'bob-pw');
like($r2, qr/^230/, 'his second, on B');

# a third on either node is refused, once each knows of the other's
sub until_refused {
    my ($node) = @_;
    my ($end, $r) = (time() + 20);
    for (1 .. 100) {
        my ($s, $rr) = session($node, '198.51.100.20', 'bob', 'bob-pw');
        $r = $rr;
        close $s if $s;
        return $r if $r =~ /^530 Too many sessions/ || time() > $end;
        sleep 0.2;
    }
    return $r;
}

like(until_refused('A'), qr/^530 Too many sessions for this user/,
    'a third on A is refused');
like(until_refused('B'), qr/^530 Too many sessions for this user/,
    'and on B');
like($pg->psql("SELECT node, sessions FROM siftp_node_sessions "
    . "WHERE name = 'bob' ORDER BY node"), qr/^node-A\|1\nnode-B\|1$/,
    'the database holds one session of bob per node');

my $nodes = nodes('B');
is(nodes_text($nodes), 'node-A:alive:other:bob=1 node-B:alive:self:bob=1',
    'B\'s API lists both nodes, one session of bob on each');
ok($nodes && $nodes->{shared} && !$nodes->{truncated}
    && $nodes->{nodes}[0]{master_pid} == $a->{_pid}
    && $nodes->{nodes}[0]{heartbeat_age_ms} < 10000
    && $nodes->{nodes}[0]{started} > 0,
    'with A\'s master pid, a recent heartbeat and its start');
is(nodes_text(nodes('A')),
    'node-A:alive:self:bob=1 node-B:alive:other:bob=1', 'and so does A\'s');

# one closed on B: a new one on A is let in

$s2->print("QUIT\r\n");
close $s2;

my ($s3, $r3);
$end = time() + 20;
for (1 .. 100) {
    ($s3, $r3) = session('A', '198.51.100.20', 'bob', 'bob-pw');
    last if $s3 || time() > $end;
    sleep 0.2;
}
like($r3, qr/^230/, 'one closed on B: a new session on A is let in');
like(until_refused('B'), qr/^530 Too many sessions for this user/,
    'and B refuses a third again');

# node A killed: its sessions stop counting after its heartbeat is old

my $master = delete $a->{_pid};
kill 'KILL', $master, children($master);
waitpid($master, 0);

my $t0 = time();
my ($s4, $r4);
for (1 .. 200) {
    ($s4, $r4) = session('B', '198.51.100.20', 'bob', 'bob-pw');
    last if $s4 || time() - $t0 > 60;
    sleep 0.3;
}
like($r4, qr/^230/, 'A killed: B lets bob in once A\'s beat is old');
my ($s5, $r5) = session('B', '198.51.100.20', 'bob', 'bob-pw');
like($r5, qr/^230/, 'twice');
like(nodes_text(nodes('B')), qr/^node-A:gone:other:\S* node-B:alive:self:/,
    'B lists A as gone');
close $_ for grep { $_ } $s1, $s3, $s4, $s5;

$a->run();
is(until_login('A', '198.51.100.21', qr/^ok$/), 'ok', 'A started again');

# the database stopped: each node bans on its own, nothing waits for it;
# a password is not checked without the database unless the cache knows
# it, so the failures are wrong API tokens, from 127.0.0.1

$pg->stop();
ok($a->wait_log(qr/PostgreSQL user store: (read|write|query) failed/, 30),
    'A lost the database');

my @st = map { (api('A', 'GET', 'stats', 'wrong-token-0123456789') =~
    /^HTTP\/1\.1 (\d+)/)[0] // 'none' } 1 .. 4;
is("@st", '401 401 401 401', 'database down: four wrong tokens through A');
like(api('B', 'GET', 'nodes'), qr/^HTTP\/1\.1 503/,
    'database down: B cannot list the nodes, and says so');
like(api('A', 'GET', 'stats'), qr/^HTTP\/1\.1 429/,
    'A bans 127.0.0.1 on its own, and its admin API answers');
is(login('A', '198.51.100.11', 'alice', 'alice-pw'), 'ok',
    'alice logs in through A meanwhile, from the verification cache');

# back: the ban A made alone reaches B

$pg->start();
my $r;
$end = time() + 30;
for (1 .. 150) {
    $r = api('B', 'GET', 'stats');
    last if $r =~ /^HTTP\/1\.1 429/ || time() > $end;
    sleep 0.2;
}
like($r, qr/^HTTP\/1\.1 429/,
    'the database back: B refuses the address A banned while it was down');

# node B's closing checks here, node A's in done()
$b->stop();
is(join("\n", grep { /\[alert\]|runtime error:|Sanitizer/ }
    split /\n/, $b->read_file('error.log') . $b->read_file('stderr')), '',
    'B: no alerts, no sanitizer errors');

$a->done();
