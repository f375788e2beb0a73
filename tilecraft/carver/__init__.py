"""TileLang's `tilelang.carver` names that its examples use: `carver.arch.driver.get_num_sms`."""
