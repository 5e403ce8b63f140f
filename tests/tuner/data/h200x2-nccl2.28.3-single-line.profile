# written by topo-calibrate: H200, 2 ranks, 1 nodes
topo-profile 1
section gpu=H200 nranks=2 nnodes=1 nccl=22803
launch_us 4.405834096666167
max_channels 24
nvls yes
link nvlink bw_gbs=393.7990144885912 lat_us=0.755664
link pci bw_gbs=50 lat_us=1
link net bw_gbs=45 lat_us=5
proto ll bw_eff=0.4644698779183641 lat_us=0 ch_bw_gbs=7.9399079371344845
proto ll128 bw_eff=0.8822198279218447 lat_us=3.5930089351173637 ch_bw_gbs=22.920351149063602
proto simple bw_eff=0.9400854740800084 lat_us=5.585176104460684 ch_bw_gbs=33.51883580230607
term broadcast ring simple channels=0 lat_us=10.608925598041262 bw_gbs=338.8688241924559 min_bytes=8 max_bytes=1073741824 rel_err=0.10044707953974077 npoints=28
term reduce ring simple channels=0 lat_us=9.029431433537411 bw_gbs=346.75694623956963 min_bytes=8 max_bytes=1073741824 rel_err=0.09812561480163941 npoints=28
term allgather ring simple channels=0 lat_us=14.480375264013643 bw_gbs=478.6021990975089 min_bytes=8 max_bytes=1073741824 rel_err=0.11636010915575547 npoints=28
term reducescatter ring simple channels=0 lat_us=12.876522460413314 bw_gbs=473.8159099810833 min_bytes=8 max_bytes=1073741824 rel_err=0.10997125853960873 npoints=28
term allreduce ring simple channels=0 lat_us=17.087514305587536 bw_gbs=295.18884967564384 min_bytes=8 max_bytes=1073741824 rel_err=0.09289911787238844 npoints=28
term broadcast ring ll128 channels=0 lat_us=9.158900940181065 bw_gbs=319.16341765396743 min_bytes=8 max_bytes=1073741824 rel_err=0.10280195033948103 npoints=28
term reduce ring ll128 channels=0 lat_us=9.572523480340736 bw_gbs=331.44929060649366 min_bytes=8 max_bytes=1073741824 rel_err=0.08017112747473797 npoints=28
term allgather ring ll128 channels=0 lat_us=10.228223900143034 bw_gbs=446.15233447736966 min_bytes=8 max_bytes=1073741824 rel_err=0.08693889547647533 npoints=28
term reducescatter ring ll128 channels=0 lat_us=11.801566375717082 bw_gbs=444.1553690338353 min_bytes=8 max_bytes=1073741824 rel_err=0.11279169755077594 npoints=28
term allreduce ring ll128 channels=0 lat_us=13.103179966900894 bw_gbs=270.28853340923644 min_bytes=8 max_bytes=1073741824 rel_err=0.08567652645784272 npoints=28
term broadcast ring ll channels=0 lat_us=4.590587322401087 bw_gbs=161.05682959465344 min_bytes=8 max_bytes=1073741824 rel_err=0.07418235221078935 npoints=28
term reduce ring ll channels=0 lat_us=4.476301982847341 bw_gbs=175.6323892088621 min_bytes=8 max_bytes=1073741824 rel_err=0.040212024473092044 npoints=28
term allgather ring ll channels=0 lat_us=5.2206615071969 bw_gbs=191.42963116625145 min_bytes=8 max_bytes=1073741824 rel_err=0.05421010869848994 npoints=28
term reducescatter ring ll channels=0 lat_us=5.121456976377807 bw_gbs=208.10205192958574 min_bytes=8 max_bytes=1073741824 rel_err=0.06069247758278892 npoints=28
term allreduce ring ll channels=0 lat_us=5.917162096666167 bw_gbs=125.49422975853672 min_bytes=8 max_bytes=1073741824 rel_err=0.04186034858439836 npoints=28
term allreduce tree simple channels=0 lat_us=18.483674034884498 bw_gbs=296.6715147012483 min_bytes=8 max_bytes=1073741824 rel_err=0.1000457955723813 npoints=28
term allreduce tree ll128 channels=0 lat_us=12.124041099280365 bw_gbs=211.69526951963033 min_bytes=8 max_bytes=1073741824 rel_err=0.0938709179243656 npoints=28
term allreduce tree ll channels=0 lat_us=6.625225706193126 bw_gbs=108.42771099424472 min_bytes=8 max_bytes=1073741824 rel_err=0.07098721077483067 npoints=28
term broadcast ring simple channels=4 lat_us=10.113352228891944 bw_gbs=87.74708224876785 min_bytes=8 max_bytes=1073741824 rel_err=0.06834463559532672 npoints=28
term reduce ring simple channels=4 lat_us=8.760845723917098 bw_gbs=133.51766351328303 min_bytes=8 max_bytes=1073741824 rel_err=0.06618700784480903 npoints=28
term allgather ring simple channels=4 lat_us=14.300334469220163 bw_gbs=116.52051713871639 min_bytes=8 max_bytes=536870912 rel_err=0.09173287299280897 npoints=27
term reducescatter ring simple channels=4 lat_us=12.580649434637893 bw_gbs=141.28536679049478 min_bytes=8 max_bytes=1073741824 rel_err=0.08232033741682873 npoints=28
term allreduce ring simple channels=4 lat_us=16.74956663634729 bw_gbs=81.43112727186403 min_bytes=8 max_bytes=1073741824 rel_err=0.07022965710483339 npoints=28
term broadcast ring ll128 channels=4 lat_us=8.951783222735475 bw_gbs=84.33575881869149 min_bytes=8 max_bytes=268435456 rel_err=0.07053128825146306 npoints=26
term reduce ring ll128 channels=4 lat_us=9.306915414934437 bw_gbs=91.03818779091058 min_bytes=8 max_bytes=1073741824 rel_err=0.06430375917063981 npoints=28
term allgather ring ll128 channels=4 lat_us=9.965900361399404 bw_gbs=97.1821433470613 min_bytes=8 max_bytes=134217728 rel_err=0.048553259875859546 npoints=25
term reducescatter ring ll128 channels=4 lat_us=11.524354144867635 bw_gbs=106.05687199013812 min_bytes=8 max_bytes=268435456 rel_err=0.06679609387900474 npoints=26
term allreduce ring ll128 channels=4 lat_us=12.822167059941611 bw_gbs=62.99940004897215 min_bytes=8 max_bytes=134217728 rel_err=0.05560905021009731 npoints=25
term broadcast ring ll channels=4 lat_us=4.27882142746509 bw_gbs=28.821537683011442 min_bytes=8 max_bytes=4194304 rel_err=0.03854380444044202 npoints=20
term reduce ring ll channels=4 lat_us=4.279627444128 bw_gbs=43.45566187706902 min_bytes=8 max_bytes=8388608 rel_err=0.02246594905654355 npoints=21
term allgather ring ll channels=4 lat_us=4.990411332123617 bw_gbs=34.0778727892238 min_bytes=8 max_bytes=8388608 rel_err=0.021253774126575028 npoints=21
term reducescatter ring ll channels=4 lat_us=4.943065283898185 bw_gbs=53.9715528738055 min_bytes=8 max_bytes=16777216 rel_err=0.040573483321028884 npoints=22
term allreduce ring ll channels=4 lat_us=5.6879523556922935 bw_gbs=29.41256921959805 min_bytes=8 max_bytes=8388608 rel_err=0.0385257380444596 npoints=21
term allreduce tree simple channels=4 lat_us=18.11307240934209 bw_gbs=64.98723189745013 min_bytes=8 max_bytes=268435456 rel_err=0.08510730840147814 npoints=26
term allreduce tree ll128 channels=4 lat_us=11.841010420972825 bw_gbs=38.820177336469165 min_bytes=8 max_bytes=16777216 rel_err=0.08663440060990057 npoints=22
term allreduce tree ll channels=4 lat_us=6.1719873896865 bw_gbs=18.916302790316287 min_bytes=8 max_bytes=2097152 rel_err=0.0393973452492354 npoints=19
term broadcast ring simple channels=8 lat_us=10.287455926900776 bw_gbs=173.17093430277234 min_bytes=8 max_bytes=1073741824 rel_err=0.08112326824534612 npoints=28
term reduce ring simple channels=8 lat_us=8.957150236609639 bw_gbs=256.6150661104635 min_bytes=8 max_bytes=1073741824 rel_err=0.07812233802144078 npoints=28
term allgather ring simple channels=8 lat_us=14.47271417763452 bw_gbs=227.6161261816332 min_bytes=8 max_bytes=1073741824 rel_err=0.09710906968272437 npoints=28
term reducescatter ring simple channels=8 lat_us=12.703241551203696 bw_gbs=275.3899720510864 min_bytes=8 max_bytes=1073741824 rel_err=0.08985988150871325 npoints=28
term allreduce ring simple channels=8 lat_us=16.912466282547623 bw_gbs=154.9077638018288 min_bytes=8 max_bytes=1073741824 rel_err=0.07746514459142707 npoints=28
term broadcast ring ll128 channels=8 lat_us=9.131705806425408 bw_gbs=167.00384006925447 min_bytes=8 max_bytes=1073741824 rel_err=0.07522549233004228 npoints=28
term reduce ring ll128 channels=8 lat_us=9.31055242332347 bw_gbs=173.61957987013218 min_bytes=8 max_bytes=1073741824 rel_err=0.0924875092275159 npoints=28
term allgather ring ll128 channels=8 lat_us=9.965111966205363 bw_gbs=192.42916027895626 min_bytes=8 max_bytes=1073741824 rel_err=0.05618997915825316 npoints=28
term reducescatter ring ll128 channels=8 lat_us=11.481954254839554 bw_gbs=207.90683806166774 min_bytes=8 max_bytes=1073741824 rel_err=0.07816238442014553 npoints=28
term allreduce ring ll128 channels=8 lat_us=12.883336004113522 bw_gbs=123.56566761000795 min_bytes=8 max_bytes=1073741824 rel_err=0.05855278682264474 npoints=28
term broadcast ring ll channels=8 lat_us=4.4080263639057895 bw_gbs=56.87017348080851 min_bytes=8 max_bytes=33554432 rel_err=0.04003228557931487 npoints=23
term reduce ring ll channels=8 lat_us=4.226036251183943 bw_gbs=79.0643243712096 min_bytes=8 max_bytes=67108864 rel_err=0.07009224413769434 npoints=24
term allgather ring ll channels=8 lat_us=5.049964340353407 bw_gbs=66.50852113586132 min_bytes=8 max_bytes=16777216 rel_err=0.0386743189404934 npoints=22
term reducescatter ring ll channels=8 lat_us=5.034849435554043 bw_gbs=98.53044891483141 min_bytes=8 max_bytes=67108864 rel_err=0.10566806361481236 npoints=24
term allreduce ring ll channels=8 lat_us=5.665867169692443 bw_gbs=54.75876148751078 min_bytes=8 max_bytes=33554432 rel_err=0.07474186627385596 npoints=23
term allreduce tree simple channels=8 lat_us=17.786213243246404 bw_gbs=128.88086546134267 min_bytes=8 max_bytes=1073741824 rel_err=0.0915806282941792 npoints=28
term allreduce tree ll128 channels=8 lat_us=11.972114178940748 bw_gbs=81.05726292055604 min_bytes=8 max_bytes=1073741824 rel_err=0.08445522112611552 npoints=28
term allreduce tree ll channels=8 lat_us=6.302912803152235 bw_gbs=37.58499977624828 min_bytes=8 max_bytes=16777216 rel_err=0.04522932687565791 npoints=22
term broadcast ring simple channels=16 lat_us=10.59274836187949 bw_gbs=320.80595182984354 min_bytes=8 max_bytes=1073741824 rel_err=0.096259350680604 npoints=28
term reduce ring simple channels=16 lat_us=9.10247490194405 bw_gbs=346.23698334195376 min_bytes=8 max_bytes=1073741824 rel_err=0.09143201769510521 npoints=28
term allgather ring simple channels=16 lat_us=14.644611664093405 bw_gbs=409.18855231915984 min_bytes=8 max_bytes=1073741824 rel_err=0.10593534183673697 npoints=28
term reducescatter ring simple channels=16 lat_us=13.011356159293674 bw_gbs=427.1945768557729 min_bytes=8 max_bytes=1073741824 rel_err=0.10261408208147495 npoints=28
term allreduce ring simple channels=16 lat_us=16.956955356118105 bw_gbs=252.4752133362067 min_bytes=8 max_bytes=1073741824 rel_err=0.088793490521284 npoints=28
term broadcast ring ll128 channels=16 lat_us=9.289478695405576 bw_gbs=306.6779543841578 min_bytes=8 max_bytes=1073741824 rel_err=0.09830685742094114 npoints=28
term reduce ring ll128 channels=16 lat_us=9.632934478242722 bw_gbs=313.70324497918847 min_bytes=8 max_bytes=1073741824 rel_err=0.07999923944504127 npoints=28
term allgather ring ll128 channels=16 lat_us=10.257119039873638 bw_gbs=356.78592274282914 min_bytes=8 max_bytes=1073741824 rel_err=0.06737507592439605 npoints=28
term reducescatter ring ll128 channels=16 lat_us=11.81051035622213 bw_gbs=357.45094113871534 min_bytes=8 max_bytes=1073741824 rel_err=0.09352952483151711 npoints=28
term allreduce ring ll128 channels=16 lat_us=13.244413637811448 bw_gbs=217.0367858750401 min_bytes=8 max_bytes=1073741824 rel_err=0.07382962677710325 npoints=28
term broadcast ring ll channels=16 lat_us=4.6117642749718035 bw_gbs=109.60264155596705 min_bytes=8 max_bytes=1073741824 rel_err=0.04336269584991135 npoints=28
term reduce ring ll channels=16 lat_us=4.490162411769349 bw_gbs=139.93587805597548 min_bytes=8 max_bytes=1073741824 rel_err=0.0748638328254675 npoints=28
term allgather ring ll channels=16 lat_us=5.217837134145715 bw_gbs=129.8341168311954 min_bytes=8 max_bytes=1073741824 rel_err=0.04000033565003185 npoints=28
term reducescatter ring ll channels=16 lat_us=5.147796149238541 bw_gbs=157.38081150229758 min_bytes=8 max_bytes=1073741824 rel_err=0.1042892104727149 npoints=28
term allreduce ring ll channels=16 lat_us=5.9480245837286745 bw_gbs=92.93248089995409 min_bytes=8 max_bytes=1073741824 rel_err=0.0891698285187111 npoints=28
term allreduce tree simple channels=16 lat_us=17.919354720444744 bw_gbs=235.16791984531264 min_bytes=8 max_bytes=1073741824 rel_err=0.1097989308349984 npoints=28
term allreduce tree ll128 channels=16 lat_us=12.065686198447331 bw_gbs=153.57838389394973 min_bytes=8 max_bytes=1073741824 rel_err=0.08809836881277536 npoints=28
term allreduce tree ll channels=16 lat_us=6.612567986649182 bw_gbs=75.72447816520763 min_bytes=8 max_bytes=536870912 rel_err=0.051398073476162244 npoints=27
term broadcast ring simple channels=24 lat_us=10.570210038927758 bw_gbs=338.55084306329405 min_bytes=8 max_bytes=1073741824 rel_err=0.10127109629260185 npoints=28
term reduce ring simple channels=24 lat_us=9.175285365768495 bw_gbs=348.22995802323214 min_bytes=8 max_bytes=1073741824 rel_err=0.08735453397483192 npoints=28
term allgather ring simple channels=24 lat_us=14.707308297288872 bw_gbs=478.0668752716161 min_bytes=8 max_bytes=1073741824 rel_err=0.10810909719928145 npoints=28
term reducescatter ring simple channels=24 lat_us=12.990488151226401 bw_gbs=474.29764589276573 min_bytes=8 max_bytes=1073741824 rel_err=0.10788144391177137 npoints=28
term allreduce ring simple channels=24 lat_us=17.239911694176744 bw_gbs=295.5125888843741 min_bytes=8 max_bytes=1073741824 rel_err=0.08634548991651728 npoints=28
term broadcast ring ll128 channels=24 lat_us=9.438027313687348 bw_gbs=319.699458562854 min_bytes=8 max_bytes=1073741824 rel_err=0.09132220814192649 npoints=28
term reduce ring ll128 channels=24 lat_us=9.608067191367757 bw_gbs=331.216197696601 min_bytes=8 max_bytes=1073741824 rel_err=0.08451602751523485 npoints=28
term allgather ring ll128 channels=24 lat_us=10.4352247126659 bw_gbs=443.6413412227545 min_bytes=8 max_bytes=1073741824 rel_err=0.08884502582161444 npoints=28
term reducescatter ring ll128 channels=24 lat_us=12.113521683004457 bw_gbs=445.5514029531982 min_bytes=8 max_bytes=1073741824 rel_err=0.11255911447116247 npoints=28
term allreduce ring ll128 channels=24 lat_us=13.260077766673598 bw_gbs=270.515529815088 min_bytes=8 max_bytes=1073741824 rel_err=0.08538046152427144 npoints=28
term broadcast ring ll channels=24 lat_us=4.616397891942185 bw_gbs=160.87306024839552 min_bytes=8 max_bytes=1073741824 rel_err=0.06046965702770714 npoints=28
term reduce ring ll channels=24 lat_us=4.588525243330796 bw_gbs=173.69321774464026 min_bytes=8 max_bytes=1073741824 rel_err=0.049469897981946925 npoints=28
term allgather ring ll channels=24 lat_us=5.341772777284495 bw_gbs=191.0710221570038 min_bytes=8 max_bytes=1073741824 rel_err=0.04739847600829077 npoints=28
term reducescatter ring ll channels=24 lat_us=5.2527606291225055 bw_gbs=207.05443232232744 min_bytes=8 max_bytes=1073741824 rel_err=0.06083193989756936 npoints=28
term allreduce ring ll channels=24 lat_us=6.004689508513879 bw_gbs=124.6149869805319 min_bytes=8 max_bytes=1073741824 rel_err=0.05037712479687525 npoints=28
term allreduce tree simple channels=24 lat_us=18.247233883803062 bw_gbs=295.11573311838487 min_bytes=8 max_bytes=1073741824 rel_err=0.10215685590511173 npoints=28
term allreduce tree ll128 channels=24 lat_us=12.250461755685759 bw_gbs=212.11894071033672 min_bytes=8 max_bytes=1073741824 rel_err=0.0920266642769244 npoints=28
term allreduce tree ll channels=24 lat_us=6.568187934153309 bw_gbs=108.27462924725214 min_bytes=8 max_bytes=1073741824 rel_err=0.07344413103563818 npoints=28
term broadcast ring simple channels=32 lat_us=10.58225867386037 bw_gbs=342.063382450301 min_bytes=8 max_bytes=1073741824 rel_err=0.10055141238951003 npoints=28
term reduce ring simple channels=32 lat_us=9.22385076358288 bw_gbs=349.496651724318 min_bytes=8 max_bytes=1073741824 rel_err=0.08986719920445363 npoints=28
term allgather ring simple channels=32 lat_us=14.785903464602494 bw_gbs=522.0203855582145 min_bytes=8 max_bytes=1073741824 rel_err=0.10345926610972861 npoints=28
term reducescatter ring simple channels=32 lat_us=12.990121464904803 bw_gbs=509.6784822790604 min_bytes=8 max_bytes=1073741824 rel_err=0.10384572926037128 npoints=28
term allreduce ring simple channels=32 lat_us=17.18345198768467 bw_gbs=311.75043819136175 min_bytes=8 max_bytes=1073741824 rel_err=0.08563431870810856 npoints=28
term broadcast ring ll128 channels=32 lat_us=9.411813975709258 bw_gbs=322.73939651377316 min_bytes=8 max_bytes=1073741824 rel_err=0.08577866559068353 npoints=28
term reduce ring ll128 channels=32 lat_us=9.56886204402083 bw_gbs=331.10513846859936 min_bytes=8 max_bytes=1073741824 rel_err=0.08637580572125714 npoints=28
term allgather ring ll128 channels=32 lat_us=10.324630348686453 bw_gbs=499.9959519535637 min_bytes=8 max_bytes=1073741824 rel_err=0.09869267735222374 npoints=28
term reducescatter ring ll128 channels=32 lat_us=11.942419957963011 bw_gbs=494.7589267215271 min_bytes=8 max_bytes=1073741824 rel_err=0.11839993922606504 npoints=28
term allreduce ring ll128 channels=32 lat_us=13.35330783676599 bw_gbs=288.85940207120603 min_bytes=8 max_bytes=1073741824 rel_err=0.08015922057819093 npoints=28
term broadcast ring ll channels=32 lat_us=4.67482958730106 bw_gbs=172.19887843014828 min_bytes=8 max_bytes=1073741824 rel_err=0.051377222083042365 npoints=28
term reduce ring ll channels=32 lat_us=4.477705959000905 bw_gbs=175.9528783850962 min_bytes=8 max_bytes=1073741824 rel_err=0.04873704855245265 npoints=28
term allgather ring ll channels=32 lat_us=5.342457766716745 bw_gbs=249.13224901220718 min_bytes=8 max_bytes=1073741824 rel_err=0.06149347133188584 npoints=28
term reducescatter ring ll channels=32 lat_us=5.365302418788026 bw_gbs=254.4307484726343 min_bytes=8 max_bytes=1073741824 rel_err=0.049400404306753284 npoints=28
term allreduce ring ll channels=32 lat_us=6.047457564161043 bw_gbs=155.85820719485713 min_bytes=8 max_bytes=1073741824 rel_err=0.04639216088984287 npoints=28
term allreduce tree simple channels=32 lat_us=18.054308654718604 bw_gbs=296.1106699047875 min_bytes=8 max_bytes=1073741824 rel_err=0.09725251334850409 npoints=28
term allreduce tree ll128 channels=32 lat_us=12.22719289488901 bw_gbs=236.76437332656164 min_bytes=8 max_bytes=1073741824 rel_err=0.059323087289866065 npoints=28
term allreduce tree ll channels=32 lat_us=6.660163012580615 bw_gbs=132.57215658415893 min_bytes=8 max_bytes=1073741824 rel_err=0.0836013020922032 npoints=28
