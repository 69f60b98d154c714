seed                                                                    KEY     
             3             1             1             1
IUA                        2             2             2             0
(3I2)               (2I2)               (2I3)               
 1 2 3
 1 2
  7 -3
