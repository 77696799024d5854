# paper_forward_mpps: Forwarding rate by number of DUT cores (64-byte UDP; counted at the generator's receive port)
# written by xdplab.testbed.experiment_report; reproduce with: gnuplot paper_forward_mpps.gp
set terminal pngcairo size 1623,900 noenhanced font "DejaVu Sans,14" linewidth 1.5
set output "paper_forward_mpps.png"
set encoding utf8
set title "Forwarding rate by number of DUT cores (64-byte UDP; counted at the generator's receive port)" font ",18"
set xlabel "DUT cores (receive queues)"
set ylabel "Forwarded (Mpps received; median, bars min-max)"
set grid xtics ytics mytics lt 1 lc rgb '#dcdcdc' lw 1, lt 1 lc rgb '#f0f0f0' lw 1
set border 3 lw 1.2
set tics nomirror out
set bars small
set pointsize 1.6
set key vertical Left reverse samplen 3 spacing 1.3 width -1
set logscale y
set format y '%g'
set yrange [0.115823:91.2142]
set ytics (0.2, 0.5, 1, 2, 5, 10, 20, 50)
set mytics 10
set xtics 1 format '%g'
set mxtics 1
set xrange [0.5:6.5]
set label 1 "ours: AMD EPYC, kernel 6.18.44-fc-v1045, veth-dut0 (veth), generator xdp_live" at screen 0.012, screen 0.0532 left font ",14" tc rgb '#333333'
set label 2 "paper (dashed): Xeon E5-1650 v4, ConnectX-5 Ex 100G, kernel bpf-next 4.17-rc7, DPDK 18.05" at screen 0.012, screen 0.0177 left font ",14" tc rgb '#333333'
set key at screen 0.012, screen 0.2483 left top maxrows 5
set bmargin at screen 0.3488
set tmargin at screen 0.9113
plot "paper_forward_mpps.dat" index 0 using 1:2:3:4 with yerrorlines lc rgb '#1f5fbf' lw 2.5 dt 1 pt 5 title "XDP_REDIRECT (devmap)", \
     "paper_forward_mpps.dat" index 1 using 1:2:3:4 with yerrorlines lc rgb '#56a0f0' lw 2.5 dt 1 pt 7 title "XDP_TX (swapmac)", \
     "paper_forward_mpps.dat" index 2 using 1:2:3:4 with yerrorlines lc rgb '#d62728' lw 2.5 dt 1 pt 9 title "DPDK mac (two ports)", \
     "paper_forward_mpps.dat" index 3 using 1:2:3:4 with yerrorlines lc rgb '#2ca02c' lw 2.5 dt 1 pt 11 title "AF_XDP l2fwd (copy)", \
     "paper_forward_mpps.dat" index 4 using 1:2:3:4 with yerrorlines lc rgb '#8e44ad' lw 2.5 dt 1 pt 13 title "Linux forwarding (ip_forward)", \
     "paper_forward_mpps.ref.dat" index 0 using 1:2 with linespoints lc rgb '#56a0f0' lw 2 dt (8,5) pt 6 title "paper: XDP_TX (paper, same NIC) (E5-1650 v4, ConnectX-5)", \
     "paper_forward_mpps.ref.dat" index 1 using 1:2 with linespoints lc rgb '#1f5fbf' lw 2 dt (8,5) pt 4 title "paper: XDP_REDIRECT (paper, other NIC) (E5-1650 v4, ConnectX-5)", \
     "paper_forward_mpps.ref.dat" index 2 using 1:2 with linespoints lc rgb '#d62728' lw 2 dt (8,5) pt 8 title "paper: DPDK mac (paper) (E5-1650 v4, ConnectX-5)", \
     NaN with lines lc rgb '#ffffff' title ' ', \
     NaN with lines lc rgb '#ffffff' title ' '
