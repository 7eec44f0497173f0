return require "chring"  -- the OpenResty-style name
