package etl.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** The fixtures scripts/jvm_fixtures.py writes (the Python side's files and answers). */
final class Fixtures {
    private Fixtures() {}

    static JsonNode read(String name) {
        try (InputStream in = Fixtures.class.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException("missing fixture " + name + " (scripts/jvm_fixtures.py)");
            return new ObjectMapper().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A text written to a file of `dir` (a program file as the driver ships it); its path. */
    static String file(Path dir, String name, String text) {
        try {
            Path p = dir.resolve(name);
            Files.writeString(p, text, StandardCharsets.US_ASCII);
            return p.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] unhex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return out;
    }
}
