#!/usr/bin/perl

# process_respawn.t -- a worker that dies at its start (here: too few file
# descriptors for its Landlock ruleset or its epoll instance, whichever it
# makes first: EMFILE, 24) is respawned after a growing delay, not in a
# loop that fills the error log; the master stays up and stops on -s stop.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep/;
use Test::Siftpd;

my $t = Test::Siftpd->new();
my $d = $t->testdir();

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
worker_rlimit_nofile 8;
events { worker_connections 64; }
EOF

$t->run();

ok($t->wait_log(qr/respawning it in slot 0 in 200 ms/),
    'the second quick death doubles the delay');

sleep 3;

my $log = $t->read_file('error.log');
my $deaths = () = $log =~ /\[emerg\].* failed \(24: /g;
my $lines = () = $log =~ /\n/g;

ok($deaths >= 2, "the worker died at its start ($deaths times)");
ok($deaths <= 12, "and was respawned with a delay ($deaths times)");
ok($lines <= 60, "the error log stays small ($lines lines)");
like($log, qr/\[warn\] .*worker process \d+ exited \d+ ms after its start, respawning it in slot 0 in \d+ ms/,
    'each delayed respawn says why');

ok(kill(0, $t->pid()), 'the master is up');

my ($rc) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'stop');
is($rc, 0, '-s stop');

my $pid = $t->pid();
ok($t->wait_for(sub { waitpid($pid, WNOHANG) == $pid }, 20),
    'the master stops');
delete $t->{_pid};

$t->done();
