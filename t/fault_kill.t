#!/usr/bin/perl

# fault_kill.t -- SIGKILL of one of two workers while 20 FTP transfers run:
# the other worker's transfers end byte for byte, the master replaces the
# worker, no upload of the dead one appears under its final name, and its
# temporary files are gone once the master swept (none is left after the
# next start either).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_login/;
use Test::Siftpd::Transfers;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

local $SIG{ALRM} = sub { die "fault_kill.t timed out\n" };
alarm(150);

ftp_conf($t, workers => 2, connections => 128,
    server => 'data_timeout 60s;');
ftp_user($t, 'alice', 'pw-a', 'list,download,upload,overwrite');

sub temp_files {
    my ($pid) = @_;
    opendir my $dh, "$d/data/alice" or return ();
    my $re = defined $pid ? qr/\.sft-$pid-/ : qr/\.sft-/;
    my @f = grep { $_ =~ $re } readdir $dh;
    closedir $dh;
    return @f;
}

my $ftp = port(8021);
my $x = Test::Siftpd::Transfers->new($t, n => 20, protos => ['ftp'],
    ftp => $ftp);

$t->run();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 20), 'two workers');

close(ftp_login($ftp, 'alice', 'pw-a'));

# 20 transfers, until both workers hold some (bounded: 4 rounds)

my %by;

for my $round (1 .. 4) {
    $x->start();
    $x->midway();

    %by = ();
    for my $tr ($x->list()) {
        my $owner = $t->conn_owner($tr->{pid}, $t->workers()) // 'none';
        push @{$by{$owner}}, $tr;
    }

    last if 2 == grep { $_ ne 'none' } keys %by;

    kill 'TERM', map { $_->{pid} } $x->list();
    $x->finish({ map { $_ => 1 } 0 .. 19 });
}

my ($dead, $alive) = sort { @{$by{$a}} <=> @{$by{$b}} }
    grep { $_ ne 'none' } keys %by;
ok($alive && !$by{none}, 'transfers running on both workers: '
    . join(', ', map { "$_ " . @{$by{$_}} } sort keys %by));

kill 'KILL', $dead;
ok($t->wait_log(qr/worker process $dead exited on signal 9/),
    'the worker was killed');
ok($t->wait_for(sub { scalar($t->workers()) == 2
    && !grep { $_ == $dead } $t->workers() }, 20),
    'the master respawned the worker');

my %lost = map { $_->{i} => 1 } @{$by{$dead}};
is(join("\n", $x->finish(\%lost)), '',
    'the other worker\'s transfers complete, byte for byte');

my @partial = grep { $_->{up} && -e $x->upload_name($_) } @{$by{$dead}};
is(scalar(@partial), 0, 'no upload of the dead worker under its final name');
ok($t->wait_for(sub { !temp_files($dead) }, 10),
    'its temporary upload files are removed');
is(scalar(temp_files()), 0, 'no temporary upload file is left');

# the next start finds nothing to sweep either

$t->stop();
$t->run();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 20), 'restarted');
is(scalar(temp_files()), 0, 'no temporary upload file after the start');

alarm(0);
$t->done();
