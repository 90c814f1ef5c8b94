#!/usr/bin/perl

# pgsql_users.t -- two nodes on one PostgreSQL user store: the schema is
# made by the first worker that connects; a user put in the tables by SQL
# logs in at once; a user created through node A's admin API logs in over
# FTP and SFTP through node B; a password changed through B refuses the old
# password on A soon after (LISTEN/NOTIFY), and a user deleted through A is
# refused on B; the API lists what the tables hold.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Time::HiRes qw/sleep time/;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;
use Test::Siftpd::PgSQL;

my $na = Test::Siftpd->new()->has('ftp', 'sftp', 'http', 'pgsql_user');
my $nb = Test::Siftpd->new();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

my $pg = Test::Siftpd::PgSQL->new($na, 5432);
$pg->start();

my %ports = (a => [8021, 8022, 8080], b => [8121, 8122, 8180]);
my %node = (a => $na, b => $nb);

$pg->node_conf($node{$_}, @{$ports{$_}}) for 'a', 'b';

# "ok", the FTP reply to PASS, or "refused" over SFTP
sub login {
    my ($n, $proto, $user, $pass) = @_;
    return $pg->login($na, $proto, port($ports{$n}[$proto eq 'ftp' ? 0 : 1]),
        $user, $pass);
}

my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub api {
    my ($n, $method, $path, $body) = @_;
    my %o = (headers => {});
    if (defined $body) {
        $o{content} = encode_json($body);
        $o{headers}{'Content-Type'} = 'application/json';
    }
    my $r = $http->request($method, 'http://127.0.0.1:'
        . port($ports{$n}[2]) . "/api/v1/users$path", \%o);
    $r->{json} = eval { decode_json($r->{content}) } if length $r->{content};
    return $r;
}

$na->run();
ok($na->wait_log(qr/schema migration "001_init" applied/, 30),
    'node A made the schema');
ok($na->wait_log(qr/PostgreSQL user store: connected, schema version 5/,
    30), 'and is connected');
is($pg->psql('SELECT version, name FROM siftp_schema_version '
    . 'ORDER BY version'), "1|001_init\n2|002_shared_bans\n3|003_nodes\n"
    . "4|004_shared_quota\n5|005_quota_return",
    'the schema versions are recorded');

$nb->run();
ok($nb->wait_log(qr/PostgreSQL user store: connected, schema version 5/,
    30), 'node B connects to the same schema');
unlike($nb->read_file('error.log'), qr/schema migration/,
    'and applies no migration again');

# a user made in the tables by hand

my $bin = $na->binary();
chomp(my $hash = `echo sql-pw | $bin hash-password`);
like($hash, qr/^\$argon2id\$/, 'a hash for the SQL user');
$pg->psql("INSERT INTO siftp_users (name, password) VALUES ('dora', '$hash');"
    . "INSERT INTO siftp_user_rules (name, path, perms) "
    . "VALUES ('dora', '/', 'list,download')");

is(login('a', 'ftp', 'dora', 'sql-pw'), 'ok', 'a user put in by SQL logs in');
like(login('a', 'ftp', 'dora', 'wrong'), qr/^530 /,
    'not with a wrong password');
like(login('a', 'ftp', 'nobody-here', 'x'), qr/^530 /,
    'an unknown user: 530');

# created through A's API, logs in through B at once

my $r = api('a', 'POST', '', { name => 'carol', password => 'carol-pw-1',
    rules => [ { path => '/', perms => 'list,download,upload' } ] });
is($r->{status}, 201, 'node A creates carol');
is(login('b', 'ftp', 'carol', 'carol-pw-1'), 'ok',
    'carol logs in over FTP through node B');
is(login('b', 'sftp', 'carol', 'carol-pw-1'), 'ok', 'and over SFTP');
is(login('a', 'ftp', 'carol', 'carol-pw-1'), 'ok', 'and through A');

$r = api('b', 'GET', '/carol');
is($r->{status}, 200, 'node B shows carol');
is($r->{json}{rules}[0]{perms} // '', 'list,download,upload',
    'with her permissions');

# a password change through B reaches A: polled, a bounded number of times

$r = api('b', 'PATCH', '/carol', { password => 'carol-pw-2' });
is($r->{status}, 200, 'node B changes carol\'s password');

my ($start, $tries, $refused) = (time(), 0, 0);
while ($tries++ < 100 && time() - $start < 20) {
    if (login('a', 'ftp', 'carol', 'carol-pw-1') =~ /^530 /) {
        $refused = 1;
        last;
    }
    sleep 0.05;
}
ok($refused, "node A refuses the old password (try $tries)");
is(login('a', 'ftp', 'carol', 'carol-pw-2'), 'ok', 'and takes the new one');

# a deletion through A reaches B

is(api('a', 'DELETE', '/carol')->{status}, 204, 'node A deletes carol');
ok($nb->wait_for(sub {
    login('b', 'ftp', 'carol', 'carol-pw-2') =~ /^530 / },
    20), 'node B refuses her');
is($pg->psql("SELECT count(*) FROM siftp_users WHERE name = 'carol'"), '0',
    'her row is gone');

$r = api('b', 'GET', '');
is(join(',', map { $_->{name} } @{$r->{json}{users} // []}), 'dora',
    'the list has what the tables hold');

$nb->stop();
is(join("\n", grep { /\[alert\]/ } split /\n/, $nb->read_file('error.log')),
    '', 'no alerts on node B');

$na->done();
