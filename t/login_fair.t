#!/usr/bin/perl

# login_fair.t -- password checks are served fairly per source: 100 wrong
# FTP logins at once from 127.0.0.1 (one check at a time server-wide) do
# not hold up a real user from 127.0.0.2, whose check runs after at most a
# few of theirs; what one source may queue is bounded, the rest refused at
# once with 421 and logged.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use IO::Select;
use Time::HiRes qw/time/;
use Test::Siftpd qw/http_get port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_connect ftp_cmd/;

my $t = Test::Siftpd->new()->has(qw/ftp http/);

my $n = $ENV{TEST_LOGIN_FLOOD} || 100;    # at most 250

ftp_conf($t, connections => 512, main => <<'EOF');
max_connections_per_address 256;
max_concurrent_password_checks 1;
login_max_failures 1000;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF
ftp_user($t, 'alice', 'pw-a', 'list');

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

my $port = port(8021);

sub argon2_runs {
    my ($body) = http_get(port(8080), '/api/v1/stats') =~ /\r\n\r\n(.*)/s;
    return decode_json($body)->{auth}{argon2_runs};
}

# the flood: every connection sends its wrong password, none waits

my @flood;

for (1 .. $n) {
    my $s = ftp_connect($port);
    ftp_cmd($s, 'USER alice');
    print $s "PASS wrong-$_\r\n";
    push @flood, $s;
}

sleep 1;                        # let the worker read them all

my $before = argon2_runs();
my $start = time();

my $s = ftp_connect($port, '127.0.0.2');
ftp_cmd($s, 'USER alice');

my $r = eval {
    local $SIG{ALRM} = sub { die "timeout\n" };
    alarm(120);
    my $r = ftp_cmd($s, 'PASS pw-a');
    alarm(0);
    $r;
} // 'timeout';

my $took = time() - $start;
my $ahead = argon2_runs() - $before - 1;

like($r, qr/^230 /, 'the real user logs in during the flood');
diag(sprintf('login took %.2fs, %d checks ran before it', $took, $ahead));
cmp_ok($ahead, '<=', 10, 'only a few flood checks ran before it');
ftp_cmd($s, 'QUIT');

# every flood connection is answered: 530 after its check, or 421 at once

my (%reply, %buf);
my $sel = IO::Select->new(@flood);
my $deadline = time() + 120;

while ($sel->count() && time() < $deadline) {
    for my $f ($sel->can_read(1)) {
        my $got = sysread($f, $buf{$f}, 512, length($buf{$f} // ''));
        if ($buf{$f} =~ /^(\d{3}) / || !$got) {
            $reply{$1 // 'eof'}++;
            $sel->remove($f);
        }
    }
}

close $_ for @flood;

diag(join(', ', map { "$_: $reply{$_}" } sort keys %reply));
is(($reply{530} // 0) + ($reply{421} // 0), $n,
    'every flood login answered 530 or 421');
cmp_ok($reply{421} // 0, '>=', $n - 20,
    'checks past the bound of one source refused at once');
like($t->read_file('error.log'),
    qr/password checks queued from this source, refused/,
    'the refusal is logged');

$t->done();
