#!/usr/bin/perl

# process_title.t -- ps shows "siftpd: master process <command line>" and
# "siftpd: worker process" (and the comm name follows); a worker can never
# gain privileges (NoNewPrivs), and after switching to "user" from root it
# holds no capability at all.  A worker draining after a reload says so.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my $user = $> == 0 ? "user nobody nogroup;\n" : '';

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
${user}worker_processes 2;
events { worker_connections 16; }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->run();

sub proc {
    my ($pid, $file) = @_;
    open my $fh, '<', "/proc/$pid/$file" or return '';
    my $s = do { local $/; <$fh> };
    return $s // '';
}

sub title { (split /\0/, proc($_[0], 'cmdline'))[0] // '' }

ok($t->wait_for(sub { $t->workers() == 2
        && !grep { title($_) ne 'siftpd: worker process' } $t->workers() }),
    'two workers titled "siftpd: worker process"')
    or diag(join ', ', map { title($_) } $t->workers());

like(title($t->pid()),
    qr/^siftpd: master process \S*siftpd .*-c \Q$d\E\/siftpd\.conf/,
    'the master shows its command line');
is(proc($t->pid(), 'comm'), "siftpd: master\n", 'master comm name');

for my $w ($t->workers()) {
    my $status = proc($w, 'status');
    is(proc($w, 'comm'), "siftpd: worker\n", "worker $w comm name");
    like($status, qr/^NoNewPrivs:\s+1$/m, "worker $w: no new privileges");

    SKIP: {
        skip 'not started as root', 3 unless $> == 0;
        for my $set (qw/CapPrm CapEff CapBnd/) {
            like($status, qr/^$set:\s+0+$/m, "worker $w: $set empty");
        }
    }
}

# an old worker holding a session in the middle of a request drains

sub reply {
    my ($s) = @_;
    my $r = '';
    while ($r !~ /\r\n\r\n/ || length($') < ($r =~ /Content-Length: (\d+)/i
            ? $1 : 0))
    {
        $s->sysread($r, 4096, length $r) or last;
    }
    return $r;
}

# a first request makes sure an old worker has accepted the connection

my $slow = IO::Socket::INET->new('127.0.0.1:' . port(8080)) or die;
$slow->print("GET /api/v1/stats HTTP/1.1\r\nHost: a\r\n\r\n");
like(reply($slow), qr/^HTTP\/1.1 200/, 'a keep-alive session is open');
$slow->print("GET /api/v1/stats HTTP/1.1\r\nHo");

$t->reload();
ok($t->wait_for(sub {
        grep { title($_) eq 'siftpd: worker process is shutting down' }
            $t->workers()
    }, 15), 'a draining worker is titled "... is shutting down"')
    or diag(join ', ', map { title($_) } $t->workers());

$slow->print("st: a\r\n\r\n");
close $slow;

$t->stop();

done_testing();
