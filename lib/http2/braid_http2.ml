module Error_code = Error_code
module Violation = Violation
module Huffman = Huffman
module Hpack = Hpack
module Settings = Settings
module Frame = Frame
