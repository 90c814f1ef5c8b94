#!/usr/bin/perl

# ftp_pasv_address.t -- pasv_address per client network: the 227 reply
# names the address of the most specific network holding the client (a
# client on 127.0.0.1 and one bound to 127.0.0.2), the default one for
# others; the data connection still works; bad directives fail -t.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_cmd ftp_login/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

ftp_conf($t,
    ftp => "pasv_address 198.51.100.7;\n"
           . "server { listen 127.0.0.1:%%PORT_8022%%; storage local; }",
    server => "pasv_address 192.0.2.44 127.0.0.2/32;\n"
              . "pasv_address 127.0.0.1 127.0.0.0/8;\n"
              . "pasv_address 203.0.113.5;");
ftp_user($t, 'alice', 'pw-a', 'list,download');

$t->write_file('data/alice/f.txt', "pasv data\n");

# bad directives

sub check {
    my ($text) = @_;
    my $c = $t->read_file('siftpd.conf');
    $c =~ s/pasv_address 203.0.113.5;\n/$text/ or die;
    $t->write_file('bad.conf', $c);
    return $t->siftpd('-t', '-c', "$d/bad.conf");
}

my ($rc, $out) = check("        pasv_address 10.0.0.1 ::1/128;\n");
isnt($rc, 0, 'an IPv6 network fails -t');
like($out, qr/IPv6 network "::1\/128" in "pasv_address": PASV is IPv4 only/,
    '... saying why');
($rc, $out) = check("        pasv_address 10.0.0.1 10.0.0.0/33;\n");
like($out, qr/invalid network "10.0.0.0\/33"/, 'a bad prefix fails -t');
($rc, $out) = check("        pasv_address 10.0.0.1 127.0.0.0/8;\n");
like($out, qr/is duplicate for this network/,
    'two addresses for one network fail -t');
($rc, $out) = check("        pasv_address 10.0.0.1;\n"
                    . "        pasv_address 10.0.0.2;\n");
like($out, qr/is duplicate for this network/, 'two defaults fail -t');
($rc, $out) = check("        pasv_address ::1;\n");
like($out, qr/invalid IPv4 address "::1"/, 'an IPv6 address fails -t');
($rc, $out) = check("        pasv_address 10.0.0.1 10.0.0.0/8 x;\n");
isnt($rc, 0, 'three arguments fail -t');

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub session {
    my ($port, $from) = @_;
    my $s = ftp_login($port, 'alice', 'pw-a', $from);
    ftp_cmd($s, 'TYPE I');
    return $s;
}

sub pasv {
    my ($s) = @_;
    my $r = ftp_cmd($s, 'PASV');
    $r =~ /^227 .*\((\d+),(\d+),(\d+),(\d+),(\d+),(\d+)\)/ or return ($r);
    return ("$1.$2.$3.$4", $5 * 256 + $6);
}

# 127.0.0.1 is in 127.0.0.0/8 only: the address it is given works

my $s = session(port(8021), '127.0.0.1');
my ($addr, $dport) = pasv($s);
is($addr, '127.0.0.1', 'client 127.0.0.1: 227 names 127.0.0.1 (127/8)');

my $dc = IO::Socket::INET->new(PeerAddr => "$addr:$dport", Timeout => 20);
ok($dc, 'data connection to the announced address');
like(ftp_cmd($s, 'RETR f.txt'), qr/^150 /, 'RETR');
my $data = $dc ? join('', <$dc>) : '';
is($data, "pasv data\n", 'the bytes');
like(scalar <$s>, qr/^226 /, 'transfer complete');
ftp_cmd($s, 'QUIT');

# 127.0.0.2: the /32 wins over the /8 (listed after it)

$s = session(port(8021), '127.0.0.2');
($addr, $dport) = pasv($s);
is($addr, '192.0.2.44', 'client 127.0.0.2: 227 names 192.0.2.44 (the /32)');

# the port is real: the way a NAT would forward it
$dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$dport",
    LocalAddr => '127.0.0.2', Timeout => 20);
ok($dc, 'data connection from 127.0.0.2 to the real port');
like(ftp_cmd($s, 'RETR f.txt'), qr/^150 /, 'RETR');
$data = $dc ? join('', <$dc>) : '';
is($data, "pasv data\n", 'the bytes');
like(scalar <$s>, qr/^226 /, 'transfer complete');
like(ftp_cmd($s, 'EPSV'), qr/^229 .*\(\|\|\|\d+\|\)/,
    'EPSV names no address, as always');
ftp_cmd($s, 'ABOR');
ftp_cmd($s, 'QUIT');

# the second server has no rules of its own: the ftp block's default

$s = session(port(8022), '127.0.0.1');
($addr) = pasv($s);
is($addr, '198.51.100.7', 'a server without rules inherits the default');
ftp_cmd($s, 'QUIT');

$t->done();
