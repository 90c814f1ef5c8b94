#!/usr/bin/perl

# process_title.t -- ps shows "siftpd: master process <command line>" and
# "siftpd: worker process" (and the comm name follows).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 2;
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
    is(proc($w, 'comm'), "siftpd: worker\n", "worker $w comm name");
}

$t->stop();

done_testing();
