package demo;

import java.util.List;

/**
 * Joins words. A "javadoc" comment ** with stars *.
 */
public class Joiner {
    private final String sep = ", "; // separator
    /* a block comment */
    public String join(List<String> words) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < words.size(); i++) {
            if (i > 0) { out.append(sep); }
            out.append("<" + words.get(i) + ">");
        }
        return out.toString();
    }
}
