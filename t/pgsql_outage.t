#!/usr/bin/perl

# pgsql_outage.t -- the PostgreSQL user store while the database is down
# for about ten seconds: a user who logged in before logs in again from
# the verification cache, a user never seen is refused at once with 421
# and a log line, a session open before goes on answering, and once the
# database is back the refused user logs in.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Time::HiRes qw/sleep time/;
use Net::FTP;
use Test::Siftpd qw/port http_get/;
use Test::Siftpd::PgSQL;

my $t = Test::Siftpd->new()->has('ftp', 'http', 'pgsql_user');

plan(skip_all => 'no python3')
    unless system('/usr/bin/python3 -c 1') == 0;

my $pg = Test::Siftpd::PgSQL->new($t, 5432);
$pg->start();

$pg->node_conf($t, 8021, undef, 8080);

# "ok", or the server's reply to PASS
sub login { $pg->login($t, 'ftp', port(8021), @_) }

$t->run();
ok($t->wait_log(qr/PostgreSQL user store: connected/, 30), 'connected');

my $bin = $t->binary();
for my $u ('alice', 'bob') {
    chomp(my $hash = `echo $u-pw | $bin hash-password`);
    $pg->psql("INSERT INTO siftp_users (name, password) VALUES ('$u', "
        . "'$hash'); INSERT INTO siftp_user_rules (name, path, perms) "
        . "VALUES ('$u', '/', 'list,download')");
}

is(login('alice', 'alice-pw'), 'ok', 'alice logs in while the database is up');

my $ftp = Net::FTP->new('127.0.0.1', Port => port(8021), Timeout => 10);
ok($ftp && $ftp->login('alice', 'alice-pw'), 'a session stays open');

$pg->stop();
my $stopped = time();

ok($t->wait_log(qr/PostgreSQL user store: read failed/, 20),
    'the lost connection is logged');

is(login('alice', 'alice-pw'), 'ok',
    'database down: alice logs in from the verification cache');
like($t->read_file('error.log'),
    qr/"alice" from 127\.0\.0\.1: password accepted \(cached\)/,
    'answered by the cache');
like(login('alice', 'not-her-pw'), qr/^421 /,
    'a password the cache does not know is refused: 421');
like(login('bob', 'bob-pw'), qr/^421 User database unavailable/,
    'bob, never seen, is refused at once with 421');
like($t->read_file('error.log'),
    qr/user "bob" from 127\.0\.0\.1: the user store cannot be reached/,
    'with a log line naming him and his address');

ok($ftp && defined $ftp->pwd(), 'the open session still answers');
like(http_get(port(8080), '/api/v1/stats') // '', qr/^HTTP\/1\.1 200/,
    'and the admin API');

# about ten seconds down, then back

sleep(0.1) while time() - $stopped < 10;
$pg->start();

my ($start, $tries, $back) = (time(), 0, 0);
while ($tries++ < 100 && time() - $start < 30) {
    if (login('bob', 'bob-pw') eq 'ok') {
        $back = 1;
        last;
    }
    sleep 0.2;
}
ok($back, "the database is back: bob logs in (try $tries)");
is(login('alice', 'not-her-pw'), '530 Login incorrect.',
    'and a wrong password is a plain 530 again');

$ftp->quit() if $ftp;

$t->done();
