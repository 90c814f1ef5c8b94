#!/usr/bin/perl

# temp_sweep.t -- temporary upload files of a worker that died are removed
# when the master replaces the worker, and those of an earlier run at
# start, while a live worker's upload goes on untouched.  The master reads
# none of these names: a sweeper process it forks does (its log line names
# another pid, and strace of the master shows no directory read).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_upload_start/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

ftp_conf($t, workers => 2);
ftp_user($t, 'alice', 'pw-a', 'list,upload,overwrite');

sub temp_files {
    opendir my $dh, "$d/data/alice" or return ();
    my @f = sort grep { /\.sft-/ } readdir $dh;
    closedir $dh;
    return @f;
}

# left by an earlier run: one with an owner, one in the old style; one
# whose owner runs (another server's worker on the same root would), and
# a file that only looks alike

$t->write_file('data/alice/.old.bin.sft-999999-abcdef', 'x');
$t->write_file('data/alice/.older.bin.sft-abcdef', 'x');
$t->write_file("data/alice/.running.bin.sft-$$-abcdef", 'kept');
$t->write_file('data/alice/.sft-1-abcdef', 'kept');

$t->run();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }), 'two workers');

# the sweeper runs once the workers are there: its line first, then look

ok($t->wait_log(qr/removed 2 temporary upload files/), 'start: logged');
is(join(' ', temp_files()), ".running.bin.sft-$$-abcdef .sft-1-abcdef",
    'start: temporary files of an earlier run removed, a running one kept');
my ($sweeper) = $t->read_file('error.log')
    =~ /\[notice\] (\d+)#\d+: removed 2 temporary upload files/;
isnt($sweeper // $t->pid(), $t->pid(), 'start: swept by another process');

# uploads that are still running, until two workers hold one each

my (%by_pid, @uploads);

for my $n (1 .. 20) {
    my ($s, $dc) = ftp_upload_start(port(8021), 'alice', 'pw-a', "up$n.bin",
        'x' x 65536);
    push @uploads, [$s, $dc, "up$n.bin"];

    my $temp;
    $t->wait_for(sub { ($temp) = grep { /^\.up$n\.bin\.sft-/ } temp_files() });
    my ($pid) = ($temp // '') =~ /\.sft-(\d+)-/ or die "no temp file up$n";
    push @{$by_pid{$pid}}, $#uploads;
    last if keys %by_pid == 2;
}

my ($dead, $alive) = sort { $a <=> $b } keys %by_pid;
ok(defined $alive, 'uploads running on both workers');

# the master's own calls while it reaps, respawns and has the files swept

my $master = $t->pid();
my $tracer;

if (system('strace -V >/dev/null 2>&1') == 0) {
    $tracer = fork() // die "fork: $!";

    if ($tracer == 0) {
        exec 'strace', '-qq', '-o', "$d/master.trace", '-p', $master, '-e',
            'trace=open,openat,openat2,getdents64,unlinkat,wait4';
        exit 127;
    }

    # a container may forbid ptrace: then this part is skipped

    if (!$t->wait_for(sub {
            open my $fh, '<', "/proc/$master/status" or return 0;
            local $/;
            return <$fh> =~ /^TracerPid:\s+[1-9]/m;
        }))
    {
        kill 'KILL', $tracer;
        waitpid($tracer, 0);
        undef $tracer;
    }
}

kill 'KILL', $dead;
ok($t->wait_log(qr/worker process $dead exited on signal 9/),
    'worker killed');
ok($t->wait_for(sub { !grep { /\.sft-$dead-/ } temp_files() }),
    'respawn: the dead worker\'s temporary files removed');
ok($t->wait_for(sub { scalar($t->workers()) == 2 }), 'respawn: replaced');

SKIP: {
    skip 'strace cannot trace the master', 2 unless $tracer;

    kill 'INT', $tracer;
    waitpid($tracer, 0);

    my $trace = $t->read_file('master.trace');
    like($trace, qr/^wait4\(/m, 'respawn: the trace saw the master reap');
    unlike($trace, qr/getdents64|unlinkat|\.sft-/,
        'respawn: the master read no directory and removed no file')
        or diag($trace);
}

my @live = grep { /\.sft-$alive-/ } temp_files();
is(scalar(@live), scalar(@{$by_pid{$alive}}),
    'respawn: the live worker\'s temporary files kept');

# the live upload ends as usual

my ($s, $dc, $name) = @{$uploads[$by_pid{$alive}[0]]};
print $dc 'y' x 1000;
close $dc;
like(scalar(<$s>), qr/^226 /, 'live upload: completed');
is(-s "$d/data/alice/$name", 65536 + 1000, 'live upload: whole');

@uploads = ();
$t->done();
