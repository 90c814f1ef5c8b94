#!/usr/bin/perl

# upgrade_inherit.t -- what a new binary does with the SIFTPD variable: a
# listening socket it names is taken over for the configured address
# (binding it anew would fail, the socket holds the port), one the
# configuration does not name is closed, a descriptor that is no listening
# socket is skipped, and a malformed entry ends the list; each with a line
# in the error log.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Fcntl qw/F_SETFD/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_login ftp_cmd/;

my $t = Test::Siftpd->new()->has('ftp');

local $SIG{ALRM} = sub { die "upgrade_inherit.t timed out\n" };
alarm(60);

ftp_conf($t);
ftp_user($t, 'alice', 'pw-a', 'list');

my $ftp = port(8021);
my $other = port(8029);

my @ls = map {
    my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$_", Listen => 8,
        ReuseAddr => 1) or die "listen $_: $!";
    fcntl($s, F_SETFD, 0) or die "fcntl: $!";
    $s;
} ($ftp, $other);

{
    local $ENV{SIFTPD} = join(';', map { fileno $_ } @ls) . ';0;99;x1;'
        . fileno($ls[0]) . ';';
    $t->run();
}

close $_ for @ls;

# before the configuration's error log is open, lines go to stderr
my $log = $t->read_file('stderr') . $t->read_file('error.log');
like($log, qr/using inherited sockets from "\d+;\d+;0;99;x1;\d+;"/,
    'the variable is logged');
like($log, qr/inherited descriptor 0 is no listening socket, ignored/,
    'a descriptor that is no socket is skipped');
like($log, qr/inherited descriptor 99 is no listening socket, ignored/,
    'a closed descriptor is skipped');
like($log, qr/invalid socket number "x1" in SIFTPD/,
    'a malformed entry ends the list');
like($log, qr/closed listening socket 127\.0\.0\.1:$other\n/,
    'the socket the configuration does not name is closed');
unlike($log, qr/bind\(\) to/, 'the configured address was not bound again');

my $s = ftp_login($ftp, 'alice', 'pw-a');
like(ftp_cmd($s, 'PWD'), qr/^257 /, 'the inherited socket serves');
close $s;

ok(!IO::Socket::INET->new(PeerAddr => "127.0.0.1:$other", Timeout => 5),
    'the closed one does not');

alarm(0);
$t->done();
